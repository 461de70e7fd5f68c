// oneDNN's effective ISA derived from CPU features (commit/cpu_isa.h), for
// LibTorch builds whose oneDNN hides its C API. That the derivation agrees
// with oneDNN itself on a real CPU under every cap is
// tests/replay/test_replay.py::test_onednn_isa_is_named_as_onednn_names_it.
#include <gtest/gtest.h>

#include "commit/cpu_isa.h"
#include "common/error.h"

namespace pot::commit {
namespace {

constexpr uint32_t kAvx2Cpu = kIsaSse41 | kIsaAvx | kIsaAvx2;
constexpr uint32_t kSkylakeX = kAvx2Cpu | kIsaAvx512Core;
constexpr uint32_t kCooperLake = kSkylakeX | kIsaAvx512Vnni | kIsaAvx512Bf16;
constexpr uint32_t kSapphireRapids = kCooperLake | kIsaAvx2Vnni | kIsaAvx512Fp16 | kIsaAmx;
constexpr uint32_t kAlderLake = kAvx2Cpu | kIsaAvx2Vnni;

TEST(CpuIsa, TheHighestIsaTheCpuHas) {
  EXPECT_EQ(onednn_isa_for(0, std::nullopt), "none");
  EXPECT_EQ(onednn_isa_for(kIsaSse41, std::nullopt), "sse41");
  EXPECT_EQ(onednn_isa_for(kAvx2Cpu, std::nullopt), "avx2");
  EXPECT_EQ(onednn_isa_for(kAlderLake, std::nullopt), "avx2_vnni");
  EXPECT_EQ(onednn_isa_for(kSkylakeX, std::nullopt), "avx512_core");
  EXPECT_EQ(onednn_isa_for(kCooperLake, std::nullopt), "avx512_core_bf16");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, std::nullopt), "avx10_1_512_amx");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids | kIsaAmxFp16, std::nullopt), "avx10_1_512_amx_fp16");
  // A rung without the one below it is not that ISA: BF16 without VNNI.
  EXPECT_EQ(onednn_isa_for(kSkylakeX | kIsaAvx512Bf16, std::nullopt), "avx512_core");
}

TEST(CpuIsa, TheCapLimitsItAndNamesAnySetOneDnnNames) {
  EXPECT_EQ(onednn_isa_for(kCooperLake, "SSE41"), "sse41");
  EXPECT_EQ(onednn_isa_for(kCooperLake, "avx2"), "avx2");
  EXPECT_EQ(onednn_isa_for(kCooperLake, "AVX512_CORE"), "avx512_core");
  EXPECT_EQ(onednn_isa_for(kCooperLake, "ALL"), "avx512_core_bf16");
  // A cap above the CPU, or on another branch of the ladder: the highest
  // ISA both contain.
  EXPECT_EQ(onednn_isa_for(kCooperLake, "AVX10_1_512_AMX"), "avx512_core_bf16");
  EXPECT_EQ(onednn_isa_for(kCooperLake, "AVX2_VNNI"), "avx2");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "AVX2_VNNI"), "avx2_vnni");
  // The names older oneDNN releases gave the same sets.
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "avx512_core_fp16"), "avx10_1_512");
  EXPECT_EQ(onednn_isa_for(kSapphireRapids, "AVX512_CORE_AMX"), "avx10_1_512_amx");
  EXPECT_EQ(onednn_isa_for(0, "AVX2"), "none");
}

TEST(CpuIsa, ACapOneDnnDoesNotNameIsRefusedNamingIt) {
  try {
    onednn_isa_for(kCooperLake, "AVX9000");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ONEDNN_MAX_CPU_ISA='AVX9000' is no oneDNN ISA"), std::string::npos)
        << e.what();
  }
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
  EXPECT_EQ(onednn_isa_for(f, "SSE41"), (f & kIsaSse41) ? "sse41" : "none");
}

}  // namespace
}  // namespace pot::commit
