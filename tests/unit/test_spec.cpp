// The canonical execution spec: JSON in, canonical bytes out, one precise
// error per validation rule, and strict canonical decoding.
#include <set>

#include <gtest/gtest.h>

#include "spec/spec.h"
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
    spec::ExecutionSpec::from_json(j);
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument) << e.what();
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(Spec, JsonRoundTripCanonicalBytesAndDigest) {
  const auto s = spec::ExecutionSpec::from_json(base_json());
  const Bytes b = s.encode();
  const auto back = spec::ExecutionSpec::decode(b);
  EXPECT_EQ(back.encode(), b);
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(spec::ExecutionSpec::from_json(s.to_json()).encode(), b);
  EXPECT_EQ(back.digest(), s.digest());
  auto changed = base_json();
  changed["intra_op_threads"] = 4;
  EXPECT_NE(spec::ExecutionSpec::from_json(changed).digest(), s.digest());
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
  const auto s = spec::ExecutionSpec::from_json(base_json());
  const Bytes b = s.encode();
  // An unknown field (number 99, varint 1) appended.
  Bytes unknown = b;
  for (uint8_t x : {0x98, 0x06, 0x01}) unknown.push_back(x);  // tag (99 << 3 | 0) as a varint, then 1
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(unknown); }), Status::kMalformed);
  // A default value written out explicitly (other_rng_use = false, field 7).
  Bytes with_default = b;
  with_default.push_back(7 << 3);
  with_default.push_back(0);
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(with_default); }), Status::kMalformed);
  // The same field twice (last one wins in protobuf; not canonical here).
  Bytes twice = b;
  twice.push_back(13 << 3);
  twice.push_back(2);
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(twice); }), Status::kMalformed);
  // Garbage and truncation.
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(ByteView(b).first(b.size() - 1)); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(Bytes{0xff, 0xff, 0xff}); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(Bytes(spec::kMaxSpecBytes + 1, 0)); }), Status::kLimit);
  // Well-formed protobuf that breaks a rule is refused as invalid, not malformed.
  v2::ExecutionSpec p;
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  p.set_intra_op_threads(0);
  const std::string unpinned = p.SerializeAsString();
  EXPECT_EQ(status_of([&] {
              spec::ExecutionSpec::decode(ByteView(reinterpret_cast<const uint8_t *>(unpinned.data()), unpinned.size()));
            }),
            Status::kInvalidArgument);
  EXPECT_EQ(spec::ExecutionSpec::decode(b).encode(), b);
}

// Every optimizer kind of section 14.2 round-trips through JSON and the
// canonical bytes, and a hyper-parameter of another kind is refused by name
// (at the proto level too: a field the kind does not have cannot be
// smuggled in through the struct).
TEST(Spec, EveryOptimizerKindRoundTrips) {
  const json kinds[] = {
      {{"kind", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.1}, {"weight_decay", 1e-4}, {"maximize", true}},
      {{"kind", "adam"}, {"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"amsgrad", true}, {"maximize", true}},
      {{"kind", "adadelta"}, {"lr", 1.0}, {"rho", 0.9}, {"eps", 1e-6}, {"weight_decay", 1e-4}},
      {{"kind", "adagrad"}, {"lr", 0.01}, {"lr_decay", 1e-3}, {"initial_accumulator_value", 0.1}, {"eps", 1e-10}},
      {{"kind", "rmsprop"}, {"lr", 1e-3}, {"alpha", 0.99}, {"eps", 1e-8}, {"momentum", 0.9}, {"centered", true}},
      {{"kind", "adamax"}, {"lr", 2e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}},
      {{"kind", "nadam"}, {"lr", 2e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"momentum_decay", 4e-3},
       {"decoupled_weight_decay", true}, {"weight_decay", 0.01}},
      {{"kind", "radam"}, {"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"maximize", true}},
      {{"kind", "muon"}, {"lr", 0.02}, {"weight_decay", 0.1}, {"momentum", 0.95}, {"nesterov", true},
       {"ns_a", 3.4445}, {"ns_b", -4.775}, {"ns_c", 2.0315}, {"ns_steps", 5}, {"eps", 1e-7},
       {"adjust_lr_fn", "match_rms_adamw"}},
  };
  std::set<std::string> encodings;
  for (const json &o : kinds) {
    json j = base_json();
    j["optimizer"] = o;
    const auto s = spec::ExecutionSpec::from_json(j);
    const Bytes b = s.encode();
    EXPECT_TRUE(encodings.insert(to_hex(b)).second) << o;
    const auto back = spec::ExecutionSpec::decode(b);
    EXPECT_EQ(back.encode(), b) << o;
    EXPECT_EQ(back.to_json()["optimizer"]["kind"], o["kind"]);
    for (const auto &[k, v] : o.items()) EXPECT_EQ(back.to_json()["optimizer"][k], v) << o["kind"] << "." << k;
    // A field of another kind: refused by the JSON form, and by validate()
    // when set on the struct.
    json extra = j;
    extra["optimizer"][o["kind"] == "adagrad" ? "rho" : "lr_decay"] = 0.5;
    EXPECT_NE(rule_message(extra).find("unknown key"), std::string::npos) << rule_message(extra);
    auto smuggled = s;
    if (o["kind"] == "adagrad")
      smuggled.optimizer.rho = 0.5;
    else
      smuggled.optimizer.lr_decay = 0.5;
    try {
      smuggled.validate();
      ADD_FAILURE() << o["kind"] << ": a field of another kind was accepted";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("does not apply to"), std::string::npos) << e.what();
    }
  }
}

TEST(Spec, EachOptimizerRuleHasItsOwnMessage) {
  struct Case {
    json optimizer;
    const char *expect;
  } cases[] = {
      {{{"kind", "adadelta"}, {"lr", 1.0}, {"rho", 1.5}, {"eps", 1e-6}}, "optimizer.rho = 1.5 is outside"},
      {{{"kind", "adagrad"}, {"lr", 0.01}, {"eps", 0.0}}, "optimizer.eps = 0 must be finite and > 0"},
      {{{"kind", "adagrad"}, {"lr", 0.01}, {"eps", 1e-10}, {"initial_accumulator_value", -1.0}},
       "optimizer.initial_accumulator_value = -1 is outside"},
      {{{"kind", "rmsprop"}, {"lr", 1e-3}, {"alpha", 0.99}, {"eps", 1e-8}, {"momentum", 1.0}},
       "optimizer.momentum = 1 is outside"},
      {{{"kind", "nadam"}, {"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"momentum_decay", -1.0}},
       "optimizer.momentum_decay = -1 is outside"},
      {{{"kind", "radam"}, {"lr", 1e-3}, {"beta1", 0.9}, {"eps", 1e-8}}, "missing key 'beta2'"},
      {{{"kind", "muon"}, {"lr", 0.02}, {"momentum", 0.95}, {"ns_a", 3.4}, {"ns_b", -4.7}, {"ns_c", 2.0},
        {"ns_steps", 100}, {"eps", 1e-7}, {"adjust_lr_fn", "original"}},
       "optimizer.ns_steps = 100 is outside 1..99"},
      {{{"kind", "muon"}, {"lr", 0.02}, {"momentum", 0.95}, {"ns_a", 3.4}, {"ns_b", -4.7}, {"ns_c", 2.0},
        {"ns_steps", 5}, {"eps", 1e-7}, {"adjust_lr_fn", "bigger"}},
       "adjust_lr_fn = 'bigger' is not original"},
      {{{"kind", "muon"}, {"lr", 0.02}, {"momentum", 0.95}, {"ns_a", 3.4}, {"ns_b", -4.7}, {"ns_c", 2.0},
        {"ns_steps", 5}, {"eps", 1e-7}, {"adjust_lr_fn", "original"}, {"maximize", true}},
       "unknown key 'maximize'"},
  };
  for (const Case &c : cases) {
    json j = base_json();
    j["optimizer"] = c.optimizer;
    EXPECT_NE(rule_message(j).find(c.expect), std::string::npos) << c.optimizer << ": " << rule_message(j);
  }
  json both = base_json();
  both["grad_clip_value"] = 0.5;
  EXPECT_NE(rule_message(both).find("grad_clip_max_norm and grad_clip_value are both set"), std::string::npos);
  both["grad_clip_max_norm"] = 0.0;
  EXPECT_EQ(rule_message(both), "accepted");
  both["grad_clip_value"] = -1.0;
  EXPECT_NE(rule_message(both).find("grad_clip_value = -1 is outside"), std::string::npos);
}

// Section 14.5: groups 1..n name their parameters, sorted and disjoint;
// each group has its own optimizer and base rate, and follows the schedule.
TEST(Spec, ParamGroupsAreCanonicalAndDisjoint) {
  const json sgd = {{"kind", "sgd"}, {"lr", 0.5}};
  json j = base_json();
  j["lr_schedule"] = json::parse(R"({"phases": [{"kind": "exponential", "gamma": 0.5}]})");
  j["param_groups"] = json::array({json{{"optimizer", sgd}, {"params", {"b.bias", "b.weight"}}}});
  const auto s = spec::ExecutionSpec::from_json(j);
  EXPECT_EQ(s.group_count(), 2u);
  EXPECT_EQ(s.group_optimizer(1).kind, spec::OptimizerKind::kSgd);
  EXPECT_EQ(s.group_learning_rate(1, 3), 0.125);
  EXPECT_EQ(s.group_learning_rate(0, 3), s.learning_rate(3));
  EXPECT_THROW(s.group_optimizer(2), Error);
  const Bytes b = s.encode();
  EXPECT_EQ(spec::ExecutionSpec::decode(b).to_json(), s.to_json());
  EXPECT_EQ(spec::ExecutionSpec::from_json(s.to_json()).encode(), b);
  // A spec without groups encodes as before (no field 18 or 19).
  pot::v2::ExecutionSpec p;
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  EXPECT_EQ(p.param_groups_size(), 1);
  const Bytes plain = spec::ExecutionSpec::from_json(base_json()).encode();
  ASSERT_TRUE(p.ParseFromArray(plain.data(), static_cast<int>(plain.size())));
  EXPECT_EQ(p.param_groups_size(), 0);

  struct Case {
    json groups;
    const char *expect;
  } cases[] = {
      {json::array({json{{"optimizer", sgd}, {"params", {"b", "a"}}}}), "strictly increasing (byte order): 'a' follows 'b'"},
      {json::array({json{{"optimizer", sgd}, {"params", {"a", "a"}}}}), "strictly increasing"},
      {json::array({json{{"optimizer", sgd}, {"params", {"a"}}}, json{{"optimizer", sgd}, {"params", {"a"}}}}),
       "param_groups[1].params: 'a' is in another group too"},
      {json::array({json{{"optimizer", sgd}, {"params", json::array()}}}), "param_groups[0].params is empty"},
      {json::array({json{{"optimizer", sgd}, {"params", {""}}}}), "params[0] must be 1..256 bytes"},
      {json::array({json{{"optimizer", json{{"kind", "sgd"}, {"lr", 0.0}}}, {"params", {"a"}}}}),
       "param_groups[0].optimizer.lr = 0 must be finite and > 0"},
      {json::array({json{{"optimizer", sgd}, {"params", {"a"}}, {"lr", 1}}}), "unknown key 'lr'"},
  };
  for (const Case &c : cases) {
    json k = base_json();
    k["param_groups"] = c.groups;
    EXPECT_NE(rule_message(k).find(c.expect), std::string::npos) << c.groups << ": " << rule_message(k);
  }
  json many = base_json();
  many["param_groups"] = json::array();
  for (size_t i = 0; i <= spec::kMaxParamGroups; ++i)
    many["param_groups"].push_back(json{{"optimizer", sgd}, {"params", {fmt::format("p{}", 1000 + i)}}});
  EXPECT_NE(rule_message(many).find("at most 64"), std::string::npos) << rule_message(many);
  // A decoder sees the same rules: an unsorted group in canonical bytes.
  pot::v2::ExecutionSpec q;
  const Bytes ok_bytes = s.encode();
  ASSERT_TRUE(q.ParseFromArray(ok_bytes.data(), static_cast<int>(ok_bytes.size())));
  q.mutable_param_groups(0)->set_params(0, "z");
  const std::string raw = q.SerializeAsString();
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::decode(ByteView(reinterpret_cast<const uint8_t *>(raw.data()), raw.size())); }),
            Status::kInvalidArgument);
}
