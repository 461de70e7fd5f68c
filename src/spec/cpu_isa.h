#pragma once
// oneDNN's effective instruction set (the `onednn:<isa>` part of a hardware
// class, docs/PROTOCOL.md 14.4) derived from the CPU, for LibTorch builds
// whose oneDNN is linked in with its C API hidden (the torch wheels on
// PyPI): dnnl_get_effective_cpu_isa cannot be called there. The derivation
// follows oneDNN's rule: the highest ISA of its list whose features the CPU
// (and the OS, for the wider registers and the AMX tiles) has and which
// ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) allows. The list and its names
// depend on the oneDNN release: 2.6 stops at `avx512_core_amx` (without
// AVX512-FP16), 3.0-3.5 add the FP16 levels as `avx512_core_fp16`,
// `avx512_core_amx` (now requiring FP16), `avx512_core_amx_fp16`, and 3.6
// renamed those `avx10_1_512`, `avx10_1_512_amx`, `avx10_1_512_amx_fp16`.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pot::spec {

// Feature bits of the ISA ladder (one bit per rung; an ISA is a set).
enum CpuIsaFeature : uint32_t {
  kIsaSse41 = 1u << 0,
  kIsaAvx = 1u << 1,
  kIsaAvx2 = 1u << 2,
  kIsaAvx2Vnni = 1u << 3,
  kIsaAvx2Vnni2 = 1u << 4,
  kIsaAvx512Core = 1u << 5,
  kIsaAvx512Vnni = 1u << 6,
  kIsaAvx512Bf16 = 1u << 7,
  kIsaAvx512Fp16 = 1u << 8,
  kIsaAmx = 1u << 9,
  kIsaAmxFp16 = 1u << 10,
};

// A oneDNN release: the version LibTorch carries.
struct OnednnVersion {
  int major = 0;
  int minor = 0;
};

// The oneDNN version in LibTorch's build report (at::show_config(),
// torch.__config__.show()): "Intel(R) MKL-DNN v3.13.3 (...)" or
// "... oneDNN v2.6.3 ..."; nullopt when the text names none.
std::optional<OnednnVersion> onednn_version_in(std::string_view build_config);

// The features of this CPU and OS (x86_64: CPUID, XGETBV and, for AMX, the
// Linux permission to use the tile data that oneDNN requests itself;
// other architectures: 0).
uint32_t cpu_isa_features();

// The effective ISA oneDNN `version` runs for `features` under the cap
// `max_isa` (a value of ONEDNN_MAX_CPU_ISA, any case; nullopt or "ALL": no
// cap), named as that release names it: "sse41" ... "avx10_1_512_amx_fp16",
// or "none" when not even SSE4.1 is there. kUnsupported for a oneDNN
// release whose list libpot does not hold (2.6 and 3.x are held);
// kInvalidArgument for a cap that release does not name (oneDNN itself
// would ignore it, so which ISA runs is the user's mistake to fix).
std::string onednn_isa_for(uint32_t features, std::optional<std::string_view> max_isa, OnednnVersion version);

// onednn_isa_for(cpu_isa_features(), the environment's cap, version).
std::string derived_onednn_isa(OnednnVersion version);

}  // namespace pot::spec
