// The spec's learning-rate schedule: values worked out by hand from torch
// 1.13's formulas, the validation rules, and the canonical encoding. That
// the rates equal torch's bit for bit is shown against torch itself by
// bindings/python/tests/test_lr_schedule.py and by the replay matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "spec/lr_schedule.h"
#include "spec/spec.h"
#include "core_test_util.h"
#include "pot/v2/spec.pb.h"

using namespace pot;
using pot::test::status_of;
using nlohmann::json;

namespace {

json schedule_spec_json(const json &schedule) {
  json j = json::parse(R"({
    "framework": "pytorch", "framework_version": "1.13.1",
    "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "dtype": "F32", "attention_backend": "math", "dropout": 0,
    "optimizer": {"kind": "sgd", "lr": 1.0},
    "batch_size": 1, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2",
    "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16
  })");
  if (!schedule.is_null()) j["lr_schedule"] = schedule;
  return j;
}

std::vector<double> rates(const json &schedule, size_t n, double base = 1.0) {
  json j = schedule_spec_json(schedule);
  j["optimizer"]["lr"] = base;
  const auto s = spec::ExecutionSpec::from_json(j);
  std::vector<double> out(n);
  spec::learning_rates(s.lr_schedule, s.optimizer.lr, 1, n, out.data());
  return out;
}

std::string schedule_rule_message(const json &schedule) {
  try {
    spec::ExecutionSpec::from_json(schedule_spec_json(schedule));
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument) << e.what();
    return e.what();
  }
  return "accepted";
}

json one_phase(const json &phase) { return json{{"phases", json::array({phase})}}; }

}  // namespace

TEST(LrSchedule, NoScheduleIsTheOptimizersRate) {
  EXPECT_EQ(rates(nullptr, 4, 0.003), (std::vector<double>{0.003, 0.003, 0.003, 0.003}));
}

TEST(LrSchedule, StepMultiStepExponentialConstantLinearByHand) {
  // StepLR(step_size 2, gamma 0.5): the rate of step t is after t-1 scheduler steps.
  EXPECT_EQ(rates(one_phase({{"kind", "step"}, {"step_size", 2}, {"gamma", 0.5}}), 6),
            (std::vector<double>{1, 1, 0.5, 0.5, 0.25, 0.25}));
  // MultiStepLR([2, 4, 4], 0.5): a repeated milestone applies gamma twice (gamma ** 2).
  EXPECT_EQ(rates(one_phase({{"kind", "multi_step"}, {"milestones", {2, 4, 4}}, {"gamma", 0.5}}), 6),
            (std::vector<double>{1, 1, 0.5, 0.5, 0.125, 0.125}));
  EXPECT_EQ(rates(one_phase({{"kind", "exponential"}, {"gamma", 0.5}}), 4), (std::vector<double>{1, 0.5, 0.25, 0.125}));
  // ConstantLR(0.25, 2): factor until total_iters, then lr * (1 / factor).
  EXPECT_EQ(rates(one_phase({{"kind", "constant"}, {"factor", 0.25}, {"total_iters", 2}}), 4),
            (std::vector<double>{0.25, 0.25, 1, 1}));
  // LinearLR(0.5, 1.0, 2): 0.5, then 0.5 * (1 + 0.5 / (2 * 0.5 + 0)) = 0.75, then
  // 0.75 * (1 + 0.5 / (1 + 0.5)), then constant.
  const std::vector<double> lin = rates(one_phase({{"kind", "linear"}, {"start_factor", 0.5}, {"end_factor", 1.0},
                                             {"total_iters", 2}}),
                                        4);
  EXPECT_EQ(lin[0], 0.5);
  EXPECT_EQ(lin[1], 0.5 * (1. + 0.5 / (2 * 0.5 + 0 * 0.5)));
  EXPECT_EQ(lin[2], lin[1] * (1. + 0.5 / (2 * 0.5 + 1 * 0.5)));
  EXPECT_EQ(lin[3], lin[2]);
}

TEST(LrSchedule, CosineIsTheChainableFormWithRestarts) {
  const double pi = 3.141592653589793;
  const std::vector<double> c = rates(one_phase({{"kind", "cosine"}, {"t_max", 3}, {"eta_min", 0.1}}), 9);
  double lr = 1.0;
  EXPECT_EQ(c[0], lr);
  for (int e = 1; e < 9; ++e) {
    if (e >= 4 && (e - 1 - 3) % 6 == 0)
      lr = lr + (1.0 - 0.1) * (1 - std::cos(pi / 3)) / 2;
    else
      lr = (1 + std::cos(pi * e / 3)) / (1 + std::cos(pi * (e - 1) / 3)) * (lr - 0.1) + 0.1;
    EXPECT_EQ(c[static_cast<size_t>(e)], lr) << "step " << e + 1;
  }
  // Not the closed form: the recursion rounds differently somewhere in a long run.
  const std::vector<double> long_run = rates(one_phase({{"kind", "cosine"}, {"t_max", 200}}), 200, 3e-3);
  size_t differs = 0;
  for (size_t i = 0; i < long_run.size(); ++i)
    differs += long_run[i] != 3e-3 * (1 + std::cos(pi * static_cast<double>(i) / 200)) / 2;
  EXPECT_GT(differs, 0u);
}

TEST(LrSchedule, SequentialSwitchesAtMilestonesWithTheClosedForm) {
  // Linear warm-up over 2 steps, then exponential decay: SequentialLR calls
  // step(0) on the second scheduler at the milestone (closed form: the base
  // rate), then steps it (chainable form).
  const json warm = {{"phases", {{{"kind", "linear"}, {"start_factor", 0.5}, {"end_factor", 1.0}, {"total_iters", 2}},
                                 {{"kind", "exponential"}, {"gamma", 0.5}}}},
                     {"milestones", {2}}};
  const std::vector<double> r = rates(warm, 5);
  EXPECT_EQ(r[0], 0.5);
  EXPECT_EQ(r[1], 0.75);
  EXPECT_EQ(r[2], 1.0);  // milestone 2: exponential's closed form at epoch 0
  EXPECT_EQ(r[3], 0.5);
  EXPECT_EQ(r[4], 0.25);
  // A cosine phase entered at a milestone starts from eta_min + (base - eta_min).
  const json to_cos = {{"phases", {{{"kind", "constant"}, {"factor", 0.5}, {"total_iters", 100}},
                                   {{"kind", "cosine"}, {"t_max", 10}, {"eta_min", 0.3}}}},
                       {"milestones", {1}}};
  const std::vector<double> c = rates(to_cos, 2, 0.7);
  EXPECT_EQ(c[0], 0.35);
  EXPECT_EQ(c[1], 0.3 + (0.7 - 0.3) * 2.0 / 2);
}

TEST(LrSchedule, RatesOfALaterRangeEqualTheWalkFromStepOne) {
  const auto s = spec::ExecutionSpec::from_json(schedule_spec_json(one_phase({{"kind", "cosine"}, {"t_max", 50}})));
  std::vector<double> all(120), tail(20);
  spec::learning_rates(s.lr_schedule, 1.0, 1, all.size(), all.data());
  spec::learning_rates(s.lr_schedule, 1.0, 101, tail.size(), tail.data());
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], all[100 + i]);
  EXPECT_EQ(s.learning_rate(57), all[56]);
  EXPECT_EQ(status_of([&] { s.learning_rate(0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { s.learning_rate(spec::kMaxLrStep + 1); }), Status::kOutOfRange);
  double out[2];
  EXPECT_EQ(status_of([&] { spec::learning_rates(s.lr_schedule, 1.0, spec::kMaxLrStep, 2, out); }),
            Status::kOutOfRange);
}

TEST(LrSchedule, ARateThatOverflowsIsRefusedAndNothingIsWritten) {
  // Valid parameters at their extremes: a rate near the largest double, and
  // a cosine phase entered at a milestone, whose closed form computes
  // (base - eta_min) * 2 (torch overflows there too): step 4's rate is inf.
  json j = schedule_spec_json(
      {{"phases", {{{"kind", "constant"}, {"factor", 0.5}, {"total_iters", 2}},
                   {{"kind", "cosine"}, {"t_max", 4}, {"eta_min", 1e6}}}},
       {"milestones", {3}}});
  j["optimizer"]["lr"] = 1.7e308;
  const auto s = spec::ExecutionSpec::from_json(j);
  std::vector<double> out(8, -1.0);
  EXPECT_EQ(status_of([&] { spec::learning_rates(s.lr_schedule, s.optimizer.lr, 1, out.size(), out.data()); }),
            Status::kInvalidArgument);
  EXPECT_EQ(out, std::vector<double>(8, -1.0));
}

TEST(LrSchedule, EachRuleHasItsOwnMessage) {
  struct Case {
    json schedule;
    const char *expect;
  } cases[] = {
      {one_phase({{"kind", "step"}, {"step_size", 0}, {"gamma", 0.5}}), "step_size must be >= 1"},
      {one_phase({{"kind", "step"}, {"step_size", 3}, {"gamma", 0.0}}), "gamma = 0 is outside (0, 1]"},
      {one_phase({{"kind", "exponential"}, {"gamma", 1.5}}), "gamma = 1.5 is outside (0, 1]"},
      {one_phase({{"kind", "multi_step"}, {"milestones", json::array()}, {"gamma", 0.5}}), "needs 1..256 milestones"},
      {one_phase({{"kind", "multi_step"}, {"milestones", {3, 2}}, {"gamma", 0.5}}), "non-decreasing and >= 1"},
      {one_phase({{"kind", "multi_step"}, {"milestones", {0}}, {"gamma", 0.5}}), "non-decreasing and >= 1"},
      {one_phase({{"kind", "cosine"}, {"t_max", 0}}), "t_max = 0 is outside 1..2^24"},
      {one_phase({{"kind", "cosine"}, {"t_max", 20000000}}), "t_max = 20000000 is outside"},
      {one_phase({{"kind", "cosine"}, {"t_max", 5}, {"eta_min", -1.0}}), "eta_min = -1 is outside"},
      {one_phase({{"kind", "linear"}, {"start_factor", 0.0}, {"end_factor", 1.0}, {"total_iters", 5}}),
       "start_factor = 0 is outside (0, 1]"},
      {one_phase({{"kind", "linear"}, {"start_factor", 0.1}, {"end_factor", 2.0}, {"total_iters", 5}}),
       "end_factor = 2 is outside [0, 1]"},
      {one_phase({{"kind", "linear"}, {"start_factor", 0.1}, {"end_factor", 1.0}, {"total_iters", 0}}),
       "total_iters must be >= 1"},
      {one_phase({{"kind", "constant"}, {"factor", 0.0}, {"total_iters", 5}}), "factor = 0 is outside (0, 1]"},
      {one_phase({{"kind", "onecycle"}}), "kind 'onecycle' is unknown"},
      {one_phase({{"kind", "step"}, {"step_size", 2}, {"gamma", 0.5}, {"t_max", 3}}), "unknown key 't_max'"},
      {json{{"phases", json::array()}}, "array of 1..16 schedulers"},
      {json{{"phases", {{{"kind", "exponential"}, {"gamma", 0.5}}, {{"kind", "exponential"}, {"gamma", 0.5}}}}},
       "2 phases need 1 milestones"},
      {json{{"phases", {{{"kind", "exponential"}, {"gamma", 0.5}}, {{"kind", "exponential"}, {"gamma", 0.5}},
                        {{"kind", "exponential"}, {"gamma", 0.5}}}},
            {"milestones", {5, 5}}},
       "strictly increasing"},
      {json{{"phases", {{{"kind", "exponential"}, {"gamma", 0.5}}}}, {"milestones", {3}}}, "1 phases need 0"},
  };
  for (const Case &c : cases)
    EXPECT_NE(schedule_rule_message(c.schedule).find(c.expect), std::string::npos)
        << c.schedule.dump() << ": " << schedule_rule_message(c.schedule);
}

TEST(LrSchedule, CanonicalEncodingAndJsonRoundTrip) {
  const json sched = {{"phases", {{{"kind", "linear"}, {"start_factor", 0.1}, {"end_factor", 1.0}, {"total_iters", 25}},
                                  {{"kind", "cosine"}, {"t_max", 175}, {"eta_min", 1e-5}},
                                  {{"kind", "multi_step"}, {"milestones", {3, 9, 9}}, {"gamma", 0.3}}}},
                      {"milestones", {25, 200}}};
  const auto s = spec::ExecutionSpec::from_json(schedule_spec_json(sched));
  const Bytes b = s.encode();
  const auto back = spec::ExecutionSpec::decode(b);
  EXPECT_TRUE(back.lr_schedule == s.lr_schedule);
  EXPECT_EQ(spec::ExecutionSpec::from_json(back.to_json()).encode(), b);
  // The schedule changes the digest; no schedule leaves field 17 out.
  const auto plain = spec::ExecutionSpec::from_json(schedule_spec_json(nullptr));
  EXPECT_NE(plain.digest(), s.digest());
  v2::ExecutionSpec p;
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  EXPECT_TRUE(p.has_lr_schedule());
  // A present but empty schedule is another encoding of "no schedule": refused.
  p.clear_lr_schedule();
  p.mutable_lr_schedule();
  const std::string empty = p.SerializeAsString();
  EXPECT_EQ(status_of([&] {
              spec::ExecutionSpec::decode(ByteView(reinterpret_cast<const uint8_t *>(empty.data()), empty.size()));
            }),
            Status::kMalformed);
  // A phase without a kind is malformed; a field of another kind is refused.
  p.clear_lr_schedule();
  p.mutable_lr_schedule()->add_phases();
  const std::string kindless = p.SerializeAsString();
  EXPECT_EQ(status_of([&] {
              spec::ExecutionSpec::decode(
                  ByteView(reinterpret_cast<const uint8_t *>(kindless.data()), kindless.size()));
            }),
            Status::kMalformed);
}

TEST(LrSchedule, LambdaPhaseIsTheBaseTimesItsFactorAndKeepsTheLastOne) {
  // LambdaLR: base_lr * lmbda(e), not chained from the previous rate; past
  // the table the last factor holds.
  const std::vector<double> r = rates(one_phase({{"kind", "lambda"}, {"factors", {0.25, 0.5, 1.0, 0.1}}}), 6, 0.3);
  EXPECT_EQ(r, (std::vector<double>{0.3 * 0.25, 0.3 * 0.5, 0.3 * 1.0, 0.3 * 0.1, 0.3 * 0.1, 0.3 * 0.1}));
  // Entered at a milestone, it starts over at factor 0 (SequentialLR's step(0)).
  const json seq = {{"phases", {{{"kind", "exponential"}, {"gamma", 0.5}}, {{"kind", "lambda"}, {"factors", {0.7, 0.9}}}}},
                    {"milestones", {2}}};
  EXPECT_EQ(rates(seq, 5, 2.0), (std::vector<double>{2.0, 1.0, 2.0 * 0.7, 2.0 * 0.9, 2.0 * 0.9}));
}

TEST(LrSchedule, RatesSetByHandAreEveryGroupsRateWhateverItsBase) {
  // Warm-up code writing param_groups[g]["lr"] = get_lr(t - 1) before each
  // step: the rate is the table's, the optimizer's lr plays no part.
  const json hand = {{"rates", {1e-4, 2e-4, 3e-4, 2.5e-4}}};
  EXPECT_EQ(rates(hand, 6, 0.9), (std::vector<double>{1e-4, 2e-4, 3e-4, 2.5e-4, 2.5e-4, 2.5e-4}));
  auto j = schedule_spec_json(hand);
  j["param_groups"] = json::array({{{"optimizer", {{"kind", "sgd"}, {"lr", 7.0}}}, {"params", {"b"}}}});
  const auto s = spec::ExecutionSpec::from_json(j);
  EXPECT_EQ(s.group_learning_rate(1, 3), 3e-4);
  EXPECT_EQ(s.learning_rate(2), 2e-4);
}

TEST(LrSchedule, TablesAreCheckedValueByValue) {
  struct Case {
    json schedule;
    const char *expect;
  } cases[] = {
      {json{{"rates", json::array()}}, "rates must be an array of 1..7680 numbers"},
      {json{{"rates", {0.1, -0.0}}}, "rates[1] = -0: each value is finite and >= +0"},
      {json{{"rates", {0.1, -1e-3}}}, "rates[1] = -0.001"},
      {json{{"rates", {"0.1"}}}, "must hold numbers"},
      {json{{"rates", {0.1}}, {"phases", {{{"kind", "exponential"}, {"gamma", 0.5}}}}}, "unknown key"},
      {one_phase({{"kind", "lambda"}, {"factors", json::array()}}), "factors must be an array of 1..7680"},
      {one_phase({{"kind", "lambda"}, {"factors", {1.0, -2.0}}}), "phases[0].factors[1] = -2"},
      {one_phase({{"kind", "lambda"}, {"factors", {1.0}}, {"gamma", 0.5}}), "unknown key 'gamma'"},
  };
  for (const Case &c : cases)
    EXPECT_NE(schedule_rule_message(c.schedule).find(c.expect), std::string::npos)
        << c.schedule.dump() << ": " << schedule_rule_message(c.schedule);
  json big = json::array();
  for (size_t i = 0; i <= spec::kMaxLrTable; ++i) big.push_back(1e-3);
  EXPECT_NE(schedule_rule_message(json{{"rates", big}}).find("1..7680"), std::string::npos);
  // Rates beside phases, built in code rather than JSON: one schedule, one meaning.
  spec::LrSchedule both;
  both.rates = {0.1};
  both.phases.push_back(spec::LrPhase{});
  both.phases[0].kind = spec::LrPhaseKind::kExponential;
  both.phases[0].gamma = 0.5;
  EXPECT_EQ(status_of([&] { both.validate(); }), Status::kInvalidArgument);
  // A factor of a non-lambda phase is a field of another kind.
  spec::LrSchedule stray;
  stray.phases.push_back(both.phases[0]);
  stray.phases[0].factors = {1.0};
  EXPECT_EQ(status_of([&] { stray.validate(); }), Status::kInvalidArgument);
}

TEST(LrSchedule, TablesEncodePackedAndRoundTrip) {
  const json lambda = one_phase({{"kind", "lambda"}, {"factors", {0.0, 0.5, 1.0}}});
  const json hand = {{"rates", {6e-4, 5.9999999999999995e-4}}};
  for (const json &sched : {lambda, hand}) {
    const auto s = spec::ExecutionSpec::from_json(schedule_spec_json(sched));
    const Bytes b = s.encode();
    const auto back = spec::ExecutionSpec::decode(b);
    EXPECT_TRUE(back.lr_schedule == s.lr_schedule) << sched.dump();
    EXPECT_EQ(spec::ExecutionSpec::from_json(back.to_json()).encode(), b);
  }
  // The hand-set rates are field 3 of field 17, packed: 8a 01 <len> 1a 10 <16 bytes>.
  const auto s = spec::ExecutionSpec::from_json(schedule_spec_json(hand));
  v2::ExecutionSpec p;
  const Bytes b = s.encode();
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  ASSERT_EQ(p.lr_schedule().rates_size(), 2);
  EXPECT_EQ(p.lr_schedule().SerializeAsString().substr(0, 2), std::string("\x1a\x10", 2));
  // The unpacked form of the same rates is another encoding: refused.
  std::string unpacked = p.SerializeAsString();
  const std::string packed_sched = p.lr_schedule().SerializeAsString();
  std::string loose;
  for (int i = 0; i < 2; ++i) {
    loose += '\x19';  // field 3, wire type 1 (64-bit)
    const double v = p.lr_schedule().rates(i);
    loose.append(reinterpret_cast<const char *>(&v), 8);
  }
  const size_t at = unpacked.rfind(packed_sched);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(static_cast<unsigned char>(unpacked[at - 1]), packed_sched.size());
  unpacked.replace(at - 1, packed_sched.size() + 1, std::string(1, static_cast<char>(loose.size())) + loose);
  EXPECT_EQ(status_of([&] {
              spec::ExecutionSpec::decode(
                  ByteView(reinterpret_cast<const uint8_t *>(unpacked.data()), unpacked.size()));
            }),
            Status::kMalformed);
}

TEST(LrSchedule, TablesTooLargeForTheSpecAreRefusedWhenBuilt) {
  // Two tables of the largest size: each is valid, together they do not fit
  // the 64 KiB a decoder accepts, so the spec is refused when built, not
  // after it has been published.
  json factors = json::array();
  for (size_t i = 0; i < spec::kMaxLrTable; ++i) factors.push_back(0.5);
  const json two = {{"phases", {{{"kind", "lambda"}, {"factors", factors}}, {{"kind", "lambda"}, {"factors", factors}}}},
                    {"milestones", {10}}};
  EXPECT_EQ(status_of([&] { spec::ExecutionSpec::from_json(schedule_spec_json(two)); }), Status::kLimit);
  const json one = one_phase({{"kind", "lambda"}, {"factors", factors}});
  const auto s = spec::ExecutionSpec::from_json(schedule_spec_json(one));
  EXPECT_LE(s.encode().size(), spec::kMaxSpecBytes);
  EXPECT_TRUE(spec::ExecutionSpec::decode(s.encode()).lr_schedule == s.lr_schedule);
}

TEST(LrSchedule, AnIntervalHoldsEachRateForThatManySteps) {
  // A StepLR stepped once per epoch of 3 batches: the rate of step t is the
  // scheduler's after floor((t - 1) / 3) steps.
  const json per_epoch = {{"phases", {{{"kind", "step"}, {"step_size", 2}, {"gamma", 0.5}}}}, {"interval", 3}};
  EXPECT_EQ(rates(per_epoch, 14), (std::vector<double>{1, 1, 1, 1, 1, 1, .5, .5, .5, .5, .5, .5, .25, .25}));
  // The per-epoch walk equals the per-step one evaluated at each epoch.
  const json cos_every = {{"phases", {{{"kind", "cosine"}, {"t_max", 7}, {"eta_min", 0.01}}}}, {"interval", 4}};
  const json cos_each = {{"phases", {{{"kind", "cosine"}, {"t_max", 7}, {"eta_min", 0.01}}}}};
  const std::vector<double> fine = rates(cos_every, 40, 0.3), coarse = rates(cos_each, 10, 0.3);
  for (size_t t = 0; t < fine.size(); ++t) EXPECT_EQ(fine[t], coarse[t / 4]) << t;
  // Hand-set rates per epoch (the ImageNet example's adjust_learning_rate).
  EXPECT_EQ(rates({{"rates", {0.1, 0.01}}, {"interval", 2}}, 5), (std::vector<double>{0.1, 0.1, 0.01, 0.01, 0.01}));
  // A later window agrees with the walk from step 1.
  const auto s = spec::ExecutionSpec::from_json(schedule_spec_json(cos_every));
  std::vector<double> tail(9);
  spec::learning_rates(s.lr_schedule, 0.3, 30, tail.size(), tail.data());
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], rates(cos_every, 40, 0.3)[29 + i]);
  // 1 is every step: the JSON form takes it and writes nothing; an encoding
  // that holds it, or an interval without a schedule, is refused.
  const auto one = spec::ExecutionSpec::from_json(schedule_spec_json({{"rates", {0.1}}, {"interval", 1}}));
  EXPECT_EQ(one.lr_schedule.interval, 0u);
  spec::LrSchedule bad;
  bad.rates = {0.1};
  bad.interval = 1;
  EXPECT_EQ(status_of([&] { bad.validate(); }), Status::kInvalidArgument);
  spec::LrSchedule bare;
  bare.interval = 5;
  EXPECT_EQ(status_of([&] { bare.validate(); }), Status::kInvalidArgument);
  // It is field 4 of the schedule, and round-trips.
  const Bytes b = s.encode();
  EXPECT_TRUE(spec::ExecutionSpec::decode(b).lr_schedule == s.lr_schedule);
  EXPECT_EQ(spec::ExecutionSpec::from_json(s.to_json()).encode(), b);
  v2::ExecutionSpec p;
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  EXPECT_EQ(p.lr_schedule().interval(), 4u);
}
