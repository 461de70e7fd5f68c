// oneDNN's effective ISA derived from CPU features (spec/cpu_isa.h), for
// LibTorch builds whose oneDNN hides its C API, in the names of each oneDNN
// release. The expected names are oneDNN's own (its dnnl_cpu_isa_t per
// release); that the derivation agrees with a running oneDNN under every
// cap, on both torch lines, is
// tests/replay/test_replay.py::test_onednn_isa_is_named_as_onednn_names_it.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "spec/cpu_isa.h"
#include "common/error.h"

namespace pot::spec {
namespace {

constexpr OnednnVersion k2_6{2, 6}, k3_5{3, 5}, k3_6{3, 6}, k3_13{3, 13};

constexpr uint32_t kAvx2Cpu = kIsaSse41 | kIsaAvx | kIsaAvx2;
constexpr uint32_t kSkylakeX = kAvx2Cpu | kIsaAvx512Core;
constexpr uint32_t kCooperLake = kSkylakeX | kIsaAvx512Vnni | kIsaAvx512Bf16;
constexpr uint32_t kSapphireRapids = kCooperLake | kIsaAvx2Vnni | kIsaAvx512Fp16 | kIsaAmx;
constexpr uint32_t kGraniteRapids = kSapphireRapids | kIsaAmxFp16;
constexpr uint32_t kAlderLake = kAvx2Cpu | kIsaAvx2Vnni;

void expect_error(Status status, const std::string &needle, const std::function<void()> &f) {
  try {
    f();
    ADD_FAILURE() << "no error, wanted: " << needle;
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CpuIsa, TheHighestIsaTheCpuHasInEachReleasesNames) {
  for (OnednnVersion v : {k2_6, k3_5, k3_6, k3_13}) {
    EXPECT_EQ(onednn_isa_for(0, std::nullopt, v), "none");
    EXPECT_EQ(onednn_isa_for(kIsaSse41, std::nullopt, v), "sse41");
    EXPECT_EQ(onednn_isa_for(kAvx2Cpu, std::nullopt, v), "avx2");
    EXPECT_EQ(onednn_isa_for(kAlderLake, std::nullopt, v), "avx2_vnni");
    EXPECT_EQ(onednn_isa_for(kSkylakeX, std::nullopt, v), "avx512_core");
    EXPECT_EQ(onednn_isa_for(kCooperLake, std::nullopt, v), "avx512_core_bf16");
    // A rung without the one below it is not that ISA: BF16 without VNNI.
    EXPECT_EQ(onednn_isa_for(kSkylakeX | kIsaAvx512Bf16, std::nullopt, v), "avx512_core");
  }
  // The AMX machines: what the CI machine's CPU reports, per release.
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, std::nullopt, k2_6), "avx512_core_amx");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, std::nullopt, k3_5), "avx512_core_amx");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, std::nullopt, k3_6), "avx10_1_512_amx");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, std::nullopt, k3_13), "avx10_1_512_amx");
  EXPECT_EQ(onednn_isa_for(kGraniteRapids, std::nullopt, k2_6), "avx512_core_amx");
  EXPECT_EQ(onednn_isa_for(kGraniteRapids, std::nullopt, k3_5), "avx512_core_amx_fp16");
  EXPECT_EQ(onednn_isa_for(kGraniteRapids, std::nullopt, k3_13), "avx10_1_512_amx_fp16");
  // 2.6's AMX level stands on BF16 alone; 3.x's needs the FP16 level, which
  // needs AVX-VNNI too (a virtual machine may hide either).
  constexpr uint32_t kAmxNoFp16 = kCooperLake | kIsaAvx2Vnni | kIsaAmx;
  EXPECT_EQ(onednn_isa_for(kAmxNoFp16, std::nullopt, k2_6), "avx512_core_amx");
  EXPECT_EQ(onednn_isa_for(kAmxNoFp16, std::nullopt, k3_13), "avx512_core_bf16");
  constexpr uint32_t kFp16NoAvxVnni = kCooperLake | kIsaAvx512Fp16 | kIsaAmx;
  EXPECT_EQ(onednn_isa_for(kFp16NoAvxVnni, std::nullopt, k3_5), "avx512_core_bf16");
  EXPECT_EQ(onednn_isa_for(kFp16NoAvxVnni, std::nullopt, k2_6), "avx512_core_amx");
  // AMX the OS does not let the process use (no kIsaAmx): the FP16 level.
  EXPECT_EQ(onednn_isa_for(kSapphireRapids & ~kIsaAmx, std::nullopt, k3_13), "avx10_1_512");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids & ~kIsaAmx, std::nullopt, k3_5), "avx512_core_fp16");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids & ~kIsaAmx, std::nullopt, k2_6), "avx512_core_bf16");
  // AVX2-VNNI-2 is a 3.x level; 2.6 runs such a CPU as avx2_vnni.
  EXPECT_EQ(onednn_isa_for(kAlderLake | kIsaAvx2Vnni2, std::nullopt, k3_13), "avx2_vnni_2");
  EXPECT_EQ(onednn_isa_for(kAlderLake | kIsaAvx2Vnni2, std::nullopt, k2_6), "avx2_vnni");
}

TEST(CpuIsa, TheCapLimitsItAndNamesAnySetTheReleaseNames) {
  for (OnednnVersion v : {k2_6, k3_5, k3_13}) {
    EXPECT_EQ(onednn_isa_for(kCooperLake, "SSE41", v), "sse41");
    EXPECT_EQ(onednn_isa_for(kCooperLake, "avx2", v), "avx2");
    EXPECT_EQ(onednn_isa_for(kCooperLake, "AVX512_CORE", v), "avx512_core");
    EXPECT_EQ(onednn_isa_for(kCooperLake, "ALL", v), "avx512_core_bf16");
    EXPECT_EQ(onednn_isa_for(kCooperLake, "default", v), "avx512_core_bf16");
    // A cap on another branch of the ladder: the highest ISA both contain.
    EXPECT_EQ(onednn_isa_for(kCooperLake, "AVX2_VNNI", v), "avx2");
    EXPECT_EQ(onednn_isa_for(kSapphireRapids, "AVX2_VNNI", v), "avx2_vnni");
    EXPECT_EQ(onednn_isa_for(kSapphireRapids, "AVX512_CORE_BF16", v), "avx512_core_bf16");
    // A cap above the CPU.
    EXPECT_EQ(onednn_isa_for(kCooperLake, "AVX512_CORE_AMX", v), "avx512_core_bf16");
    EXPECT_EQ(onednn_isa_for(0, "AVX2", v), "none");
  }
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "AVX512_CORE_AMX", k2_6), "avx512_core_amx");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "avx512_core_fp16", k3_5), "avx512_core_fp16");
  EXPECT_EQ(onednn_isa_for(kGraniteRapids, "AVX512_CORE_AMX", k3_5), "avx512_core_amx");
  // 3.6 on: the new names, and the 3.0 names of the same sets as caps.
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "AVX10_1_512", k3_13), "avx10_1_512");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "avx512_core_fp16", k3_13), "avx10_1_512");
  EXPECT_EQ(onednn_isa_for(kGraniteRapids, "AVX512_CORE_AMX", k3_13), "avx10_1_512_amx");
  EXPECT_EQ(onednn_isa_for(kGraniteRapids, "AVX10_1_512_AMX_FP16", k3_6), "avx10_1_512_amx_fp16");
}

TEST(CpuIsa, ACapTheReleaseDoesNotNameIsRefusedNamingItAndTheRelease) {
  expect_error(Status::kInvalidArgument, "ONEDNN_MAX_CPU_ISA='AVX9000' is no ISA of oneDNN 3.13",
               [] { onednn_isa_for(kCooperLake, "AVX9000", k3_13); });
  // Names of later releases, which the earlier ones ignore.
  expect_error(Status::kInvalidArgument, "ONEDNN_MAX_CPU_ISA='AVX10_1_512' is no ISA of oneDNN 3.5",
               [] { onednn_isa_for(kSapphireRapids, "AVX10_1_512", k3_5); });
  expect_error(Status::kInvalidArgument, "ONEDNN_MAX_CPU_ISA='AVX512_CORE_FP16' is no ISA of oneDNN 2.6",
               [] { onednn_isa_for(kSapphireRapids, "AVX512_CORE_FP16", k2_6); });
  expect_error(Status::kInvalidArgument, "'AVX2_VNNI_2' is no ISA of oneDNN 2.6 (want one of ALL, AVX512_CORE_AMX,",
               [] { onednn_isa_for(kAlderLake, "AVX2_VNNI_2", k2_6); });
}

TEST(CpuIsa, AReleaseWithoutAListIsRefusedNamingIt) {
  for (OnednnVersion v : {OnednnVersion{2, 7}, OnednnVersion{1, 8}, OnednnVersion{4, 0}})
    expect_error(Status::kUnsupported, "LibTorch carries oneDNN " + std::to_string(v.major) + "." +
                                           std::to_string(v.minor) + " with its C API hidden",
                 [v] { onednn_isa_for(kCooperLake, std::nullopt, v); });
}

TEST(CpuIsa, TheVersionComesFromLibTorchsBuildReport) {
  auto v = onednn_version_in("PyTorch built with:\n  - Intel(R) MKL-DNN v3.13.3 (Git Hash b38f97e)\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 3);
  EXPECT_EQ(v->minor, 13);
  v = onednn_version_in("  - Intel(R) MKL-DNN v2.6.3 (Git Hash N/A)\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 2);
  EXPECT_EQ(v->minor, 6);
  v = onednn_version_in("  - oneDNN v3.7 (...)");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->minor, 7);
  EXPECT_FALSE(onednn_version_in("PyTorch built with:\n  - GCC 12.2\n"));
  EXPECT_FALSE(onednn_version_in("MKL-DNN v3"));
  EXPECT_FALSE(onednn_version_in("MKL-DNN v.3.1"));
  EXPECT_FALSE(onednn_version_in("MKL-DNN v123456.1"));
}

TEST(CpuIsa, ThisCpuHasAConsistentLadder) {
  // Each rung the CPU reports implies the rungs below it.
  const uint32_t f = cpu_isa_features();
  if (f & kIsaAvx512Core) {
    EXPECT_TRUE(f & kIsaAvx2);
  }
  if (f & kIsaAvx2) {
    EXPECT_TRUE(f & kIsaAvx);
  }
  if (f & kIsaAvx) {
    EXPECT_TRUE(f & kIsaSse41);
  }
  EXPECT_EQ(onednn_isa_for(f, "SSE41", k3_13), (f & kIsaSse41) ? "sse41" : "none");
}

}  // namespace
}  // namespace pot::spec
