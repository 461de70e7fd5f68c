// bench_lr_schedule - the cost of a spec's learning rates
// (pot_spec_learning_rates, docs/PROTOCOL.md 14.3).
//
// What it does: for each of five schedules (none, StepLR, ExponentialLR,
// CosineAnnealingLR, linear warm-up then cosine as a SequentialLR), times
// the rate of one step t for t = 10^3 .. --max-step (each a walk over the t
// steps before it, as a verifier pays once per challenged step), --reps
// repetitions, and reports the median time and nanoseconds per step walked.
// A verifier replaying step t computes lr(t) and lr(t+1) in one walk; the
// recorder walks the schedule once for the whole run.
//
// Usage: bench_lr_schedule [--json] [--max-step N] [--reps N]
// Exit status: 0 when the run completed, 1 for bad options, 2 for a pot error.
//
// Only the public C API (pot.h) is used.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "pot.h"

namespace {

std::string spec_json(const std::string &schedule) {
  std::string j = R"({"framework": "pytorch", "framework_version": "1.13.1",
    "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
    "optimizer": {"kind": "adamw", "lr": 0.0003, "beta1": 0.9, "beta2": 0.95, "eps": 1e-08},
    "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2",
    "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16)";
  if (!schedule.empty()) j += R"(, "lr_schedule": )" + schedule;
  return j + "}";
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false;
  uint64_t max_step = 10000000;
  int reps = 5;
  CLI::App app{"bench_lr_schedule: cost of pot_spec_learning_rates"};
  app.add_flag("--json", json, "JSON object on stdout, report on stderr");
  app.add_option("--max-step", max_step, "largest step timed (powers of ten from 1000)")
      ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 32));
  app.add_option("--reps", reps, "repetitions per point")->check(CLI::Range(1, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  std::FILE *report = json ? stderr : stdout;

  const std::vector<std::pair<const char *, std::string>> schedules = {
      {"none", ""},
      {"step", R"({"phases": [{"kind": "step", "step_size": 1000, "gamma": 0.5}]})"},
      {"exponential", R"({"phases": [{"kind": "exponential", "gamma": 0.9999999}]})"},
      {"cosine", R"({"phases": [{"kind": "cosine", "t_max": 16777216, "eta_min": 1e-06}]})"},
      {"warmup+cosine", R"({"phases": [{"kind": "linear", "start_factor": 0.001, "end_factor": 1.0, "total_iters": 2000},
                                        {"kind": "cosine", "t_max": 16777216, "eta_min": 1e-06}], "milestones": [2000]})"},
  };
  std::string points;
  std::fprintf(report, "%-14s %12s %12s %10s\n", "schedule", "step", "median s", "ns/step");
  for (const auto &[name, sched] : schedules) {
    pot_spec *spec = nullptr;
    pot_error *err = nullptr;
    bench::check(pot_spec_from_json(&spec, spec_json(sched).c_str(), &err), err, "pot_spec_from_json");
    for (uint64_t t = 1000; t <= max_step; t *= 10) {
      std::vector<double> secs;
      double rates[2] = {0, 0};
      for (int r = 0; r < reps; ++r) {
        const auto t0 = bench::Clock::now();
        bench::check(pot_spec_learning_rates(rates, 2, spec, t, &err), err, "pot_spec_learning_rates");
        secs.push_back(bench::seconds_since(t0));
      }
      std::sort(secs.begin(), secs.end());
      const double median = secs[secs.size() / 2];
      std::fprintf(report, "%-14s %12llu %12.6f %10.2f\n", name, static_cast<unsigned long long>(t), median,
                   median * 1e9 / static_cast<double>(t));
      bench::Json p;
      p.str("schedule", name).integer("step", t).num("median_seconds", median)
          .num("ns_per_step", median * 1e9 / static_cast<double>(t)).num("rate", rates[0]);
      points += (points.empty() ? "" : ",") + p.text();
    }
    pot_spec_free(spec);
  }
  bench::Json out;
  out.raw("points", "[" + points + "]");
  if (json) std::printf("%s\n", out.text().c_str());
  return 0;
}
