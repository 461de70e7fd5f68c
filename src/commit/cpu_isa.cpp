#include "commit/cpu_isa.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "common/error.h"

namespace pot::commit {
namespace {

struct Isa {
  std::string_view name;  // oneDNN's, lower case, without "cpu_isa_"
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
constexpr uint32_t kAvx10_1_512 = kAvx512CoreBf16 | kIsaAvx512Fp16;
constexpr uint32_t kAvx10_1_512Amx = kAvx10_1_512 | kIsaAmx;
constexpr uint32_t kAvx10_1_512AmxFp16 = kAvx10_1_512Amx | kIsaAmxFp16;

// Highest first: oneDNN's effective ISA is the first the CPU and the cap allow.
constexpr std::array<Isa, 11> kLadder{{
    {"avx10_1_512_amx_fp16", kAvx10_1_512AmxFp16},
    {"avx10_1_512_amx", kAvx10_1_512Amx},
    {"avx10_1_512", kAvx10_1_512},
    {"avx512_core_bf16", kAvx512CoreBf16},
    {"avx512_core_vnni", kAvx512CoreVnni},
    {"avx512_core", kAvx512Core},
    {"avx2_vnni_2", kAvx2Vnni2},
    {"avx2_vnni", kAvx2Vnni},
    {"avx2", kAvx2},
    {"avx", kAvx},
    {"sse41", kSse41},
}};

// ONEDNN_MAX_CPU_ISA's values, with the names older oneDNN releases gave the
// same sets.
uint32_t cap_features(std::string_view cap) {
  std::string v(cap);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "all") return ~0u;
  if (v == "avx512_core_fp16") return kAvx10_1_512;
  if (v == "avx512_core_amx") return kAvx10_1_512Amx;
  if (v == "avx512_core_amx_fp16") return kAvx10_1_512AmxFp16;
  for (const Isa &i : kLadder)
    if (v == i.name) return i.features;
  fail(Status::kInvalidArgument,
       "ONEDNN_MAX_CPU_ISA='{}' is no oneDNN ISA (want ALL, SSE41, AVX, AVX2, AVX2_VNNI, AVX2_VNNI_2, AVX512_CORE, "
       "AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX10_1_512, AVX10_1_512_AMX or AVX10_1_512_AMX_FP16)",
       cap);
}

}  // namespace

std::string onednn_isa_for(uint32_t features, std::optional<std::string_view> max_isa) {
  const uint32_t cap = max_isa ? cap_features(*max_isa) : ~0u;
  for (const Isa &i : kLadder)
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
  if ((f & kIsaAvx512Bf16) && bit(d7, 23)) f |= kIsaAvx512Fp16;
  // AMX-TILE, AMX-INT8, AMX-BF16, with the OS saving tile state.
  if ((f & kIsaAvx512Fp16) && os_amx && bit(d7, 24) && bit(d7, 25) && bit(d7, 22)) f |= kIsaAmx;
  if ((f & kIsaAmx) && bit(a71, 21)) f |= kIsaAmxFp16;
#endif
  return f;
}

std::string derived_onednn_isa() {
  const char *cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap || !*cap) cap = std::getenv("DNNL_MAX_CPU_ISA");
  std::optional<std::string_view> c;
  if (cap && *cap) c = cap;
  return onednn_isa_for(cpu_isa_features(), c);
}

}  // namespace pot::commit
