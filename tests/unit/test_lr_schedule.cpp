// The spec's learning-rate schedule: values worked out by hand from torch
// 1.13's formulas, the validation rules, and the canonical encoding. That
// the rates equal torch's bit for bit is shown against torch itself by
// bindings/python/tests/test_lr_schedule.py and by the replay matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "commit/lr_schedule.h"
#include "commit/spec.h"
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
  const auto s = commit::ExecutionSpec::from_json(j);
  std::vector<double> out(n);
  commit::learning_rates(s.lr_schedule, s.optimizer.lr, 1, n, out.data());
  return out;
}

std::string schedule_rule_message(const json &schedule) {
  try {
    commit::ExecutionSpec::from_json(schedule_spec_json(schedule));
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
  const auto s = commit::ExecutionSpec::from_json(schedule_spec_json(one_phase({{"kind", "cosine"}, {"t_max", 50}})));
  std::vector<double> all(120), tail(20);
  commit::learning_rates(s.lr_schedule, 1.0, 1, all.size(), all.data());
  commit::learning_rates(s.lr_schedule, 1.0, 101, tail.size(), tail.data());
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], all[100 + i]);
  EXPECT_EQ(s.learning_rate(57), all[56]);
  EXPECT_EQ(status_of([&] { s.learning_rate(0); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { s.learning_rate(commit::kMaxLrStep + 1); }), Status::kOutOfRange);
  double out[2];
  EXPECT_EQ(status_of([&] { commit::learning_rates(s.lr_schedule, 1.0, commit::kMaxLrStep, 2, out); }),
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
  const auto s = commit::ExecutionSpec::from_json(j);
  std::vector<double> out(8, -1.0);
  EXPECT_EQ(status_of([&] { commit::learning_rates(s.lr_schedule, s.optimizer.lr, 1, out.size(), out.data()); }),
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
  const auto s = commit::ExecutionSpec::from_json(schedule_spec_json(sched));
  const Bytes b = s.encode();
  const auto back = commit::ExecutionSpec::decode(b);
  EXPECT_TRUE(back.lr_schedule == s.lr_schedule);
  EXPECT_EQ(commit::ExecutionSpec::from_json(back.to_json()).encode(), b);
  // The schedule changes the digest; no schedule leaves field 17 out.
  const auto plain = commit::ExecutionSpec::from_json(schedule_spec_json(nullptr));
  EXPECT_NE(plain.digest(), s.digest());
  v2::ExecutionSpec p;
  ASSERT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  EXPECT_TRUE(p.has_lr_schedule());
  // A present but empty schedule is another encoding of "no schedule": refused.
  p.clear_lr_schedule();
  p.mutable_lr_schedule();
  const std::string empty = p.SerializeAsString();
  EXPECT_EQ(status_of([&] {
              commit::ExecutionSpec::decode(ByteView(reinterpret_cast<const uint8_t *>(empty.data()), empty.size()));
            }),
            Status::kMalformed);
  // A phase without a kind is malformed; a field of another kind is refused.
  p.clear_lr_schedule();
  p.mutable_lr_schedule()->add_phases();
  const std::string kindless = p.SerializeAsString();
  EXPECT_EQ(status_of([&] {
              commit::ExecutionSpec::decode(
                  ByteView(reinterpret_cast<const uint8_t *>(kindless.data()), kindless.size()));
            }),
            Status::kMalformed);
}
