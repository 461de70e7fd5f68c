#include "spec/cpu_isa.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "common/error.h"

namespace pot::spec {
namespace {

struct Isa {
  std::string_view name;  // as the release names it, lower case, without "cpu_isa_"
  uint32_t features;
};

constexpr uint32_t kSse41 = kIsaSse41;
constexpr uint32_t kAvx = kSse41 | kIsaAvx;
constexpr uint32_t kAvx2 = kAvx | kIsaAvx2;
constexpr uint32_t kAvx2Vnni = kAvx2 | kIsaAvx2Vnni;
constexpr uint32_t kAvx2Vnni2 = kAvx2Vnni | kIsaAvx2Vnni2;
constexpr uint32_t kAvx512Core = kAvx2 | kIsaAvx512Core;
constexpr uint32_t kAvx512CoreVnni = kAvx512Core | kIsaAvx512Vnni;
constexpr uint32_t kAvx512CoreBf16 = kAvx512CoreVnni | kIsaAvx512Bf16;
// oneDNN 2.6: AMX on top of AVX512-BF16.
constexpr uint32_t kAmx2 = kAvx512CoreBf16 | kIsaAmx;
// oneDNN 3.x: the FP16 level also needs AVX-VNNI, and AMX needs the FP16 level.
constexpr uint32_t kFp16 = kAvx512CoreBf16 | kIsaAvx2Vnni | kIsaAvx512Fp16;
constexpr uint32_t kAmx3 = kFp16 | kIsaAmx;
constexpr uint32_t kAmx3Fp16 = kAmx3 | kIsaAmxFp16;

// Each release's list, highest first: the effective ISA is the first entry
// the CPU and the cap allow. (oneDNN 2.6 also reports its internal levels
// "avx512_core_bf16 with AMX-INT8 or AMX-BF16 only" as avx512_core_bf16,
// which is what this list gives for such a CPU.)
constexpr std::array<Isa, 8> kLadder2_6{{
    {"avx512_core_amx", kAmx2},
    {"avx512_core_bf16", kAvx512CoreBf16},
    {"avx512_core_vnni", kAvx512CoreVnni},
    {"avx512_core", kAvx512Core},
    {"avx2_vnni", kAvx2Vnni},
    {"avx2", kAvx2},
    {"avx", kAvx},
    {"sse41", kSse41},
}};
constexpr std::array<Isa, 11> kLadder3_0{{
    {"avx512_core_amx_fp16", kAmx3Fp16},
    {"avx512_core_amx", kAmx3},
    {"avx512_core_fp16", kFp16},
    {"avx512_core_bf16", kAvx512CoreBf16},
    {"avx512_core_vnni", kAvx512CoreVnni},
    {"avx512_core", kAvx512Core},
    {"avx2_vnni_2", kAvx2Vnni2},
    {"avx2_vnni", kAvx2Vnni},
    {"avx2", kAvx2},
    {"avx", kAvx},
    {"sse41", kSse41},
}};
constexpr std::array<Isa, 11> kLadder3_6{{
    {"avx10_1_512_amx_fp16", kAmx3Fp16},
    {"avx10_1_512_amx", kAmx3},
    {"avx10_1_512", kFp16},
    {"avx512_core_bf16", kAvx512CoreBf16},
    {"avx512_core_vnni", kAvx512CoreVnni},
    {"avx512_core", kAvx512Core},
    {"avx2_vnni_2", kAvx2Vnni2},
    {"avx2_vnni", kAvx2Vnni},
    {"avx2", kAvx2},
    {"avx", kAvx},
    {"sse41", kSse41},
}};
// oneDNN 3.6+ still takes the 3.0 names of the renamed levels as caps.
constexpr std::array<Isa, 3> kAliases3_6{{
    {"avx512_core_fp16", kFp16},
    {"avx512_core_amx", kAmx3},
    {"avx512_core_amx_fp16", kAmx3Fp16},
}};

struct Release {
  std::vector<Isa> ladder;
  std::vector<Isa> aliases;
};

Release release(OnednnVersion v) {
  auto of = [](const auto &ladder) { return std::vector<Isa>(ladder.begin(), ladder.end()); };
  if (v.major == 2 && v.minor == 6) return {of(kLadder2_6), {}};
  if (v.major == 3 && v.minor >= 0 && v.minor <= 5) return {of(kLadder3_0), {}};
  if (v.major == 3 && v.minor >= 6) return {of(kLadder3_6), of(kAliases3_6)};
  fail(Status::kUnsupported,
       "hardware class: LibTorch carries oneDNN {}.{} with its C API hidden, and libpot derives oneDNN's ISA only "
       "for oneDNN 2.6 and 3.x (docs/PROTOCOL.md 14.4): a process of this build has no class",
       v.major, v.minor);
}

std::string lower(std::string_view s) {
  std::string v(s);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v;
}

uint32_t cap_features(const Release &r, std::string_view cap, OnednnVersion v) {
  const std::string c = lower(cap);
  if (c == "all" || c == "default") return ~0u;
  for (const auto *list : {&r.ladder, &r.aliases})
    for (const Isa &i : *list)
      if (c == i.name) return i.features;
  std::string names = "ALL";
  for (const Isa &i : r.ladder) {
    names += ", ";
    for (char ch : i.name) names += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  fail(Status::kInvalidArgument,
       "ONEDNN_MAX_CPU_ISA='{}' is no ISA of oneDNN {}.{} (want one of {}): oneDNN would ignore it, so which ISA "
       "it runs cannot be told from the cap",
       cap, v.major, v.minor, names);
}

#if defined(__linux__) && defined(__x86_64__)
// Linux (5.16 on) lets a process use the AMX tile data only once it asked
// for it; oneDNN asks before its first AMX kernel and runs without AMX when
// refused. Asking here changes nothing oneDNN would not change itself.
bool amx_permitted() {
  constexpr long kGetPerm = 0x1022, kReqPerm = 0x1023, kXtileData = 18;
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kGetPerm, &mask) != 0) return false;
  if (mask & (1ul << kXtileData)) return true;
  if (syscall(SYS_arch_prctl, kReqPerm, kXtileData) != 0) return false;
  return syscall(SYS_arch_prctl, kGetPerm, &mask) == 0 && (mask & (1ul << kXtileData));
}
#endif

}  // namespace

std::optional<OnednnVersion> onednn_version_in(std::string_view config) {
  for (std::string_view key : {"MKL-DNN v", "oneDNN v"}) {
    const size_t at = config.find(key);
    if (at == std::string_view::npos) continue;
    size_t i = at + key.size();
    auto number = [&](int &out) {
      const size_t start = i;
      out = 0;
      while (i < config.size() && i - start < 4 && std::isdigit(static_cast<unsigned char>(config[i])))
        out = out * 10 + (config[i++] - '0');
      return i > start;
    };
    OnednnVersion v;
    if (number(v.major) && i < config.size() && config[i++] == '.' && number(v.minor)) return v;
  }
  return std::nullopt;
}

std::string onednn_isa_for(uint32_t features, std::optional<std::string_view> max_isa, OnednnVersion version) {
  const Release r = release(version);
  const uint32_t cap = max_isa ? cap_features(r, *max_isa, version) : ~0u;
  for (const Isa &i : r.ladder)
    if ((i.features & ~features) == 0 && (i.features & ~cap) == 0) return std::string(i.name);
  return "none";
}

uint32_t cpu_isa_features() {
  uint32_t f = 0;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const bool sse41 = c & (1u << 19), osxsave = c & (1u << 27), avx = c & (1u << 28);
  uint64_t xcr0 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t{hi} << 32) | lo;
  }
  const bool os_ymm = (xcr0 & 0x6) == 0x6;               // SSE and AVX state
  const bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;   // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;        // XTILECFG, XTILEDATA
  unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0, d71 = 0, unused = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, unused, b7, c7, d7);
    __cpuid_count(7, 1, a71, unused, unused, d71);
  }
  auto bit = [](unsigned reg, int n) { return (reg >> n) & 1u; };
  if (sse41) f |= kIsaSse41;
  if (avx && os_ymm) f |= kIsaAvx;
  if ((f & kIsaAvx) && bit(b7, 5)) f |= kIsaAvx2;
  if ((f & kIsaAvx2) && bit(a71, 4)) f |= kIsaAvx2Vnni;                      // AVX-VNNI
  if ((f & kIsaAvx2Vnni) && bit(d71, 4) && bit(d71, 5)) f |= kIsaAvx2Vnni2;  // AVX-VNNI-INT8, AVX-NE-CONVERT
  // AVX512F, AVX512DQ, AVX512BW, AVX512VL.
  if ((f & kIsaAvx2) && os_zmm && bit(b7, 16) && bit(b7, 17) && bit(b7, 30) && bit(b7, 31)) f |= kIsaAvx512Core;
  if ((f & kIsaAvx512Core) && bit(c7, 11)) f |= kIsaAvx512Vnni;
  if ((f & kIsaAvx512Vnni) && bit(a71, 5)) f |= kIsaAvx512Bf16;
  // AVX512-FP16 as a feature of its own: which levels need it (and AVX-VNNI)
  // is each release's list.
  if ((f & kIsaAvx512Core) && bit(d7, 23)) f |= kIsaAvx512Fp16;
  // AMX-TILE, AMX-INT8, AMX-BF16, with the OS saving tile state and letting
  // this process use it.
  bool amx = os_amx && bit(d7, 24) && bit(d7, 25) && bit(d7, 22);
#if defined(__linux__)
  amx = amx && amx_permitted();
#endif
  if (amx) f |= kIsaAmx;
  if ((f & kIsaAmx) && bit(a71, 21)) f |= kIsaAmxFp16;
#endif
  return f;
}

std::string derived_onednn_isa(OnednnVersion version) {
  const char *cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap || !*cap) cap = std::getenv("DNNL_MAX_CPU_ISA");
  std::optional<std::string_view> c;
  if (cap && *cap) c = cap;
  return onednn_isa_for(cpu_isa_features(), c, version);
}

}  // namespace pot::spec
