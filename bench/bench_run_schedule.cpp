// bench_run_schedule - what registering a run of a run-seeded task costs
// (pot_task_commitment / pot_task_check_commitment, docs/PROTOCOL.md 17.3).
//
// What it does: for a run-seeded task over --dataset samples with batch
// --batch, and step counts such that steps * batch + dataset draws grow to
// --max-draws, times pot_task_check_commitment of a miner's commitment (the
// ledger's start_training_commitment recomputes the run's schedule root)
// over --reps repetitions and reports the median, nanoseconds per index draw
// and the peak resident set. The task rule caps a run at 2^24 draws
// (kMaxRunSeededDraws). --rule run_seeded_uniform times the uniform rule
// (16.3), whose draws are the run's positions only (no permutation of the
// dataset, which may then be as large as 2^62).
//
// Usage: bench_run_schedule [--json] [--rule R] [--dataset N] [--batch B] [--max-draws N] [--reps N]
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

int main(int argc, char **argv) {
  bool json = false;
  uint64_t dataset = 100000, max_draws = uint64_t{1} << 24;
  uint32_t batch = 64;
  int reps = 3;
  std::string rule = "run_seeded";
  CLI::App app{"bench_run_schedule: cost of registering a run of a run-seeded task"};
  app.add_flag("--json", json, "JSON object on stdout, report on stderr");
  app.add_option("--rule", rule, "run_seeded or run_seeded_uniform")
      ->check(CLI::IsMember({"run_seeded", "run_seeded_uniform"}));
  app.add_option("--dataset", dataset, "samples in the dataset (at most 2^25 under run_seeded)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  app.add_option("--batch", batch, "batch size")->check(CLI::Range(1u, 1u << 16));
  app.add_option("--max-draws", max_draws, "largest steps * batch + dataset timed (doubling from 2^20)")
      ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 24));
  app.add_option("--reps", reps, "repetitions per point")->check(CLI::Range(1, 100));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  const bool uniform = rule == "run_seeded_uniform";
  if (!uniform && dataset > (uint64_t{1} << 25)) {
    std::fprintf(stderr, "bench_run_schedule: --dataset above 2^25 needs --rule run_seeded_uniform\n");
    return 1;
  }
  const uint64_t fixed = uniform ? 0 : dataset;  // draws a run costs besides its own positions
  std::FILE *report = json ? stderr : stdout;
  const std::string spec = R"({"framework": "pytorch", "framework_version": "1.13.1",
    "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
    "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": )" + std::to_string(batch) + R"(,
    "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16})";
  std::string points;
  std::fprintf(report, "%-10s %12s %12s %10s %10s\n", "steps", "draws", "median s", "ns/draw", "peak MiB");
  for (uint64_t draws = uint64_t{1} << 20; draws <= max_draws; draws *= 2) {
    if (draws <= fixed) continue;
    const uint64_t steps = (draws - fixed) / batch;
    if (steps == 0) continue;
    const std::string task_json = R"({"owner": "6f776e6572", "spec": )" + spec + R"(, "dataset_root": ")" +
                                  std::string(64, 'c') + R"(", "dataset_size": )" + std::to_string(dataset) +
                                  R"(, "initial_state": {"published_digest": ")" + std::string(64, 'a') +
                                  R"("}, "schedule": {")" + rule + R"(": {}}, "min_steps": 1, "max_steps": )" +
                                  std::to_string(steps) + R"(, "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 1}, "end_height": 1000000})";
    pot_task *task = nullptr;
    pot_error *err = nullptr;
    bench::check(pot_task_from_json(&task, task_json.c_str(), &err), err, "pot_task_from_json");
    const uint8_t miner[] = {'m', 'i', 'n', 'e', 'r'};
    pot_commitment *c = nullptr;
    bench::check(pot_task_commitment(&c, task, miner, sizeof miner, steps, &err), err, "pot_task_commitment");
    std::vector<double> secs;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = bench::Clock::now();
      bench::check(pot_task_check_commitment(task, c, &err), err, "pot_task_check_commitment");
      secs.push_back(bench::seconds_since(t0));
    }
    std::sort(secs.begin(), secs.end());
    const double median = secs[secs.size() / 2];
    const uint64_t used = steps * batch + fixed;
    const double peak = bench::peak_rss_mib();
    std::fprintf(report, "%-10llu %12llu %12.3f %10.1f %10.0f\n", static_cast<unsigned long long>(steps),
                 static_cast<unsigned long long>(used), median, median * 1e9 / static_cast<double>(used), peak);
    bench::Json p;
    p.integer("steps", steps).integer("draws", used).num("median_seconds", median)
        .num("ns_per_draw", median * 1e9 / static_cast<double>(used)).num("peak_rss_mib", peak);
    points += (points.empty() ? "" : ",") + p.text();
    pot_commitment_free(c);
    pot_task_free(task);
  }
  bench::Json out;
  out.str("rule", rule).integer("dataset", dataset).integer("batch", batch).raw("points", "[" + points + "]");
  if (json) std::printf("%s\n", out.text().c_str());
  return 0;
}
