// The canonical execution spec: JSON in, canonical bytes out, one precise
// error per validation rule, and strict canonical decoding.
#include <gtest/gtest.h>

#include "commit/spec.h"
#include "core_test_util.h"
#include "pot/v2/spec.pb.h"

using namespace pot;
using pot::test::status_of;
using nlohmann::json;

namespace {

json base_json() {
  return json::parse(R"({
    "framework": "pytorch", "framework_version": "1.13.1",
    "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "dtype": "F32", "attention_backend": "math", "dropout": 0.1,
    "optimizer": {"kind": "adamw", "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                  "weight_decay": 0.01, "amsgrad": false},
    "grad_clip_max_norm": 1.0, "grad_accum_microbatches": 2, "batch_size": 32,
    "deterministic_algorithms": true, "intra_op_threads": 2, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2",
    "seed_policy": {"kind": "per_step", "base_seed": 1234}, "norm_bucket_resolution": 16
  })");
}

std::string rule_message(const json &j) {
  try {
    commit::ExecutionSpec::from_json(j);
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument) << e.what();
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(Spec, JsonRoundTripCanonicalBytesAndDigest) {
  const auto s = commit::ExecutionSpec::from_json(base_json());
  const Bytes b = s.encode();
  const auto back = commit::ExecutionSpec::decode(b);
  EXPECT_EQ(back.encode(), b);
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(commit::ExecutionSpec::from_json(s.to_json()).encode(), b);
  EXPECT_EQ(back.digest(), s.digest());
  auto changed = base_json();
  changed["intra_op_threads"] = 4;
  EXPECT_NE(commit::ExecutionSpec::from_json(changed).digest(), s.digest());
}

TEST(Spec, EachRuleHasItsOwnMessage) {
  struct Case {
    const char *pointer;
    json value;
    const char *expect;
  } cases[] = {
      {"/dropout", 0.1, "accepted"},
      {"/seed_policy", json{{"kind", "none"}}, "dropout > 0 draws from the RNG"},
      {"/intra_op_threads", 0, "thread count must be pinned"},
      {"/dropout", 1.0, "dropout = 1 is outside"},
      {"/dropout", -0.5, "dropout = -0.5 is outside"},
      {"/optimizer/kind", "lion", "optimizer.kind 'lion' is unknown"},
      {"/optimizer/lr", 0.0, "optimizer.lr = 0 must be finite and > 0"},
      {"/optimizer/beta1", 1.0, "optimizer.beta1 = 1 is outside"},
      {"/optimizer/eps", 0.0, "optimizer.eps = 0 must be finite and > 0"},
      {"/optimizer/weight_decay", -1.0, "optimizer.weight_decay = -1 is outside"},
      {"/dtype", "I32", "not a floating-point training dtype"},
      {"/dtype", "F12", "is not a dtype name"},
      {"/framework", "", "framework must be 1..64 bytes"},
      {"/grad_accum_microbatches", 0, "grad_accum_microbatches = 0"},
      {"/batch_size", 1, "batch_size = 1 must be in grad_accum_microbatches"},
      {"/grad_clip_max_norm", -1.0, "grad_clip_max_norm = -1 is outside"},
      {"/norm_bucket_resolution", 0, "norm_bucket_resolution = 0"},
      {"/model_program_digest", "abcd", "model_program_digest"},
      {"/unexpected", 1, "unknown key 'unexpected'"},
      {"/intra_op_threads", -2, "intra_op_threads must be a non-negative integer"},
  };
  for (const Case &c : cases) {
    json j = base_json();
    j[json::json_pointer(c.pointer)] = c.value;
    EXPECT_NE(rule_message(j).find(c.expect), std::string::npos) << c.pointer << ": " << rule_message(j);
  }
  json other_rng = base_json();
  other_rng["dropout"] = 0.0;
  other_rng["other_rng_use"] = true;
  other_rng["seed_policy"] = json{{"kind", "none"}};
  EXPECT_NE(rule_message(other_rng).find("other_rng_use is declared"), std::string::npos);
  json no_rng = other_rng;
  no_rng["other_rng_use"] = false;
  EXPECT_EQ(rule_message(no_rng), "accepted");  // no RNG use: no policy needed
  json sgd = base_json();
  sgd["optimizer"] = json{{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 0.0}, {"nesterov", true}};
  EXPECT_NE(rule_message(sgd).find("nesterov requires momentum > 0"), std::string::npos);
  sgd["optimizer"]["momentum"] = 0.9;
  EXPECT_EQ(rule_message(sgd), "accepted");
  sgd["optimizer"]["beta1"] = 0.9;
  EXPECT_NE(rule_message(sgd).find("unknown key 'beta1'"), std::string::npos);
  json missing = base_json();
  missing.erase("batch_size");
  EXPECT_NE(rule_message(missing).find("missing key 'batch_size'"), std::string::npos);
}

// docs/PROTOCOL.md 14.4: the hardware class names the architecture, ATen's
// CPU capability and oneDNN's ISA; anything else (protocol version 1's
// free labels included) is refused naming the part that is wrong.
TEST(Spec, HardwareClassHasOneForm) {
  for (const char *ok : {"cpu-x86_64/aten:avx2/onednn:avx2", "cpu-x86_64/aten:default/onednn:sse41",
                         "cpu-x86_64/aten:avx512/onednn:avx512_core_bf16", "cpu-aarch64/aten:default/onednn:none",
                         "cpu-ppc64le/aten:vsx/onednn:none", "cpu-s390x/aten:zvector/onednn:none"}) {
    json j = base_json();
    j["hardware_class"] = ok;
    EXPECT_EQ(rule_message(j), "accepted") << ok;
  }
  struct Case {
    const char *value;
    const char *expect;
  } cases[] = {
      {"cpu", "does not start with 'cpu-'"},
      {"cpu-x86_64", "it has no '/aten:' part followed by an '/onednn:' part"},
      {"gpu-sm_80/aten:default/onednn:none", "does not start with 'cpu-'"},
      {"cpu-x86_64/onednn:avx2/aten:avx2", "it has no '/aten:' part followed by an '/onednn:' part"},
      {"cpu-riscv64/aten:default/onednn:none", "architecture 'riscv64' is none of"},
      {"cpu-x86_64/aten:AVX2/onednn:avx2", "'AVX2' is not an ATen CPU capability of x86_64 (default, avx2, avx512)"},
      {"cpu-aarch64/aten:avx2/onednn:none", "'avx2' is not an ATen CPU capability of aarch64 (default)"},
      {"cpu-x86_64/aten:/onednn:avx2", "'' is not an ATen CPU capability"},
      {"cpu-x86_64/aten:avx2/onednn:", "the oneDNN ISA must be 1..32 of [a-z0-9_]"},
      {"cpu-x86_64/aten:avx2/onednn:AVX2", "the oneDNN ISA must be"},
      {"cpu-x86_64/aten:avx2/onednn:avx2/x", "the oneDNN ISA must be"},
      {"cpu-x86_64/aten:avx2/onednn:avx512_core_amx_fp16_and_more_things", "the oneDNN ISA must be"},
  };
  for (const Case &c : cases) {
    json j = base_json();
    j["hardware_class"] = c.value;
    const std::string m = rule_message(j);
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.value << ": " << m;
    EXPECT_NE(m.find("hardware_class '" + std::string(c.value) + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("protocol version 2"), std::string::npos) << m;
  }
}

TEST(Spec, DecodeRejectsNonCanonicalBytes) {
  const auto s = commit::ExecutionSpec::from_json(base_json());
  const Bytes b = s.encode();
  // An unknown field (number 99, varint 1) appended.
  Bytes unknown = b;
  for (uint8_t x : {0x98, 0x06, 0x01}) unknown.push_back(x);  // tag (99 << 3 | 0) as a varint, then 1
  EXPECT_EQ(status_of([&] { commit::ExecutionSpec::decode(unknown); }), Status::kMalformed);
  // A default value written out explicitly (other_rng_use = false, field 7).
  Bytes with_default = b;
  with_default.push_back(7 << 3);
  with_default.push_back(0);
  EXPECT_EQ(status_of([&] { commit::ExecutionSpec::decode(with_default); }), Status::kMalformed);
  // The same field twice (last one wins in protobuf; not canonical here).
  Bytes twice = b;
  twice.push_back(13 << 3);
  twice.push_back(2);
  EXPECT_EQ(status_of([&] { commit::ExecutionSpec::decode(twice); }), Status::kMalformed);
  // Garbage and truncation.
  EXPECT_EQ(status_of([&] { commit::ExecutionSpec::decode(ByteView(b).first(b.size() - 1)); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::ExecutionSpec::decode(Bytes{0xff, 0xff, 0xff}); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { commit::ExecutionSpec::decode(Bytes(5000, 0)); }), Status::kLimit);
  // Well-formed protobuf that breaks a rule is refused as invalid, not malformed.
  v2::ExecutionSpec p;
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  p.set_intra_op_threads(0);
  const std::string unpinned = p.SerializeAsString();
  EXPECT_EQ(status_of([&] {
              commit::ExecutionSpec::decode(ByteView(reinterpret_cast<const uint8_t *>(unpinned.data()), unpinned.size()));
            }),
            Status::kInvalidArgument);
  EXPECT_EQ(commit::ExecutionSpec::decode(b).encode(), b);
}
