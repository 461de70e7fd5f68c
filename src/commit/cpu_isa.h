#pragma once
// oneDNN's effective instruction set (the `onednn:<isa>` part of a hardware
// class, docs/PROTOCOL.md 14.4) derived from the CPU, for LibTorch builds
// whose oneDNN is linked in with its C API hidden (the torch wheels on
// PyPI): dnnl_get_effective_cpu_isa cannot be called there. The names and
// their order are oneDNN 3.x's; the derivation follows its rule: the highest
// ISA of the list whose features the CPU (and the OS, for the wider
// registers) has and which ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) allows.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pot::commit {

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

// The features of this CPU and OS (x86_64: CPUID and XGETBV; other
// architectures: 0).
uint32_t cpu_isa_features();

// The effective ISA for `features` under the cap `max_isa` (a value of
// ONEDNN_MAX_CPU_ISA, any case; nullopt or "ALL": no cap): "sse41" ...
// "avx10_1_512_amx_fp16", or "none" when not even SSE4.1 is there.
// kInvalidArgument for a cap oneDNN does not name.
std::string onednn_isa_for(uint32_t features, std::optional<std::string_view> max_isa);

// onednn_isa_for(cpu_isa_features(), the environment's cap).
std::string derived_onednn_isa();

}  // namespace pot::commit
