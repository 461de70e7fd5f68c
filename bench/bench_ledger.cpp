// bench_ledger - what the reference ledger's committees cost
// (docs/ledger.md sections 2.4 and 4, docs/PROTOCOL.md 11.1).
//
// What it does: for registries of --verifiers V (doubling from 1,000), a
// ledger with committees of --committee K posts a run-seeded task, registers
// V verifiers of different stakes, seals --runs R runs of it (each drawing
// --rounds challenges), posts the draw height's randomness, and times
// register_verifier (per call), issue_challenge (per run: its rounds'
// committees drawn by stake), save and load (which redraws every committee
// from the registry). Reports the medians, the state's size and the peak
// resident set.
//
// Usage: bench_ledger [--json] [--max-verifiers N] [--committee K] [--runs R] [--rounds N]
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

std::string apply(pot_ledger *l, const std::string &call, const char *what) {
  pot_bytes out{};
  pot_error *err = nullptr;
  bench::check(pot_ledger_apply(&out, l, call.c_str(), &err), err, what);
  std::string s(reinterpret_cast<const char *>(out.data), out.len);
  pot_bytes_free(&out);
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false;
  uint64_t max_verifiers = 64000;
  uint32_t committee = 64, runs = 16, rounds = 8;
  CLI::App app{"bench_ledger: cost of the reference ledger's committees"};
  app.add_flag("--json", json, "JSON object on stdout, report on stderr");
  app.add_option("--max-verifiers", max_verifiers, "largest registry timed (doubling from 1,000)")
      ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 22));
  app.add_option("--committee", committee, "committee_size")->check(CLI::Range(1u, 1024u));
  app.add_option("--runs", runs, "runs sealed and drawn")->check(CLI::Range(1u, 4096u));
  app.add_option("--rounds", rounds, "challenge rounds per run")->check(CLI::Range(1u, 64u));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  std::FILE *report = json ? stderr : stdout;
  const uint64_t steps = 100;
  const std::string spec = R"({"framework": "pytorch", "framework_version": "1.13.1",
    "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
    "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 4,
    "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16})";
  const std::string task_json = R"({"owner": "6f776e6572", "spec": )" + spec + R"(, "dataset_root": ")" +
                                std::string(64, 'c') + R"(", "dataset_size": 1000, "initial_state": {"published_digest": ")" +
                                std::string(64, 'a') + R"("}, "schedule": {"run_seeded": {}}, "min_steps": )" +
                                std::to_string(steps) + R"(, "max_steps": )" + std::to_string(steps) +
                                R"(, "challenge_policy": {"rounds": )" + std::to_string(rounds) +
                                R"(, "mode": "bitwise", "committee_size": )" + std::to_string(committee) +
                                R"(}, "end_height": 18446744073709551615})";
  pot_task *task = nullptr;
  pot_error *err = nullptr;
  bench::check(pot_task_from_json(&task, task_json.c_str(), &err), err, "pot_task_from_json");
  pot_bytes task_bytes{};
  bench::check(pot_task_encode(&task_bytes, task, &err), err, "pot_task_encode");
  // The runs' commitments, made once.
  std::vector<std::string> commitments, miners;
  for (uint32_t r = 0; r < runs; ++r) {
    const std::string miner = "miner " + std::to_string(r);
    pot_commitment *c = nullptr;
    bench::check(pot_task_commitment(&c, task, reinterpret_cast<const uint8_t *>(miner.data()), miner.size(), steps,
                                     &err),
                 err, "pot_task_commitment");
    pot_bytes b{};
    bench::check(pot_commitment_encode(&b, c, &err), err, "pot_commitment_encode");
    commitments.push_back(bench::hex(b));
    miners.push_back(bench::hex(miner));
    pot_bytes_free(&b);
    pot_commitment_free(c);
  }

  std::string points;
  std::fprintf(report, "%-10s %10s %12s %14s %12s %10s %10s %10s\n", "verifiers", "committee", "register us",
               "issue ms/run", "state MiB", "save ms", "load ms", "peak MiB");
  for (uint64_t v = 1000; v <= max_verifiers; v *= 2) {
    const std::string config = R"({"draw_delay": 1, "opening_window": 10, "commit_window": 10, "reveal_window": 10,
      "max_committee_size": )" + std::to_string(committee) + R"(, "min_stake": 1, "max_attempts": 1, "dispute_window": 1, "dispute_arity": 2, "task_bond": 1, "miner_bond": 1, "dispute_bond": 1,
      "max_task_blocks": 18446744073709551615, "max_open_tasks": 1, "miner_grace": 0, "max_rounds": )" +
                               std::to_string(rounds) + "}";
    pot_ledger *l = nullptr;
    bench::check(pot_ledger_new(&l, config.c_str(), &err), err, "pot_ledger_new");
    uint64_t now = 1;
    apply(l, R"({"call": "deposit", "identity": "6f776e6572", "now": 1, "amount": 1})", "deposit");
    for (const std::string &m : miners)
      apply(l, R"({"call": "deposit", "identity": ")" + m + R"(", "now": 1, "amount": 1})", "deposit");
    apply(l, R"({"call": "post_task", "caller": "6f776e6572", "now": 1, "task": ")" + bench::hex(task_bytes) + "\"}",
          "post_task");
    const auto t_reg = bench::Clock::now();
    for (uint64_t i = 0; i < v; ++i) {
      const std::string id = bench::hex("verifier " + std::to_string(i));
      apply(l, R"({"call": "register_verifier", "caller": ")" + id + R"(", "now": 1, "stake": )" +
                   std::to_string(1 + (i * 2654435761u) % 1000) + "}",
            "register_verifier");
    }
    const double register_us = bench::seconds_since(t_reg) * 1e6 / static_cast<double>(v);
    std::vector<std::string> run_ids;
    for (uint32_t r = 0; r < runs; ++r) {
      const std::string out = apply(l, R"({"call": "start_training_commitment", "caller": ")" + miners[r] +
                                           R"(", "now": 1, "commitment": ")" + commitments[r] + "\"}",
                                    "start_training_commitment");
      const std::string run_id = out.substr(out.find("\"run_id\":\"") + 10, 64);
      run_ids.push_back(run_id);
      apply(l, R"({"call": "post_checkpoint_root", "caller": ")" + miners[r] + R"(", "now": 1, "run_id": ")" + run_id +
                   R"(", "size": )" + std::to_string(steps) + R"(, "root": ")" + std::string(64, 'e') +
                   R"(", "consistency_proof": ""})",
            "post_checkpoint_root");
    }
    now = 2;
    apply(l, R"({"call": "post_randomness", "now": 2, "randomness": ")" + std::string(64, '7') + "\"}",
          "post_randomness");
    std::vector<double> issue;
    for (const std::string &run_id : run_ids) {
      const auto t0 = bench::Clock::now();
      apply(l, R"({"call": "issue_challenge", "now": )" + std::to_string(now) + R"(, "run_id": ")" + run_id + "\"}",
            "issue_challenge");
      issue.push_back(bench::seconds_since(t0) * 1e3);
    }
    std::sort(issue.begin(), issue.end());
    pot_bytes state{};
    const auto t_save = bench::Clock::now();
    bench::check(pot_ledger_save(&state, l, &err), err, "pot_ledger_save");
    const double save_ms = bench::seconds_since(t_save) * 1e3;
    const auto t_load = bench::Clock::now();
    pot_ledger *back = nullptr;
    bench::check(pot_ledger_load(&back, state.data, state.len, &err), err, "pot_ledger_load");
    const double load_ms = bench::seconds_since(t_load) * 1e3;
    const double mib = static_cast<double>(state.len) / (1 << 20);
    const double peak = bench::peak_rss_mib();
    std::fprintf(report, "%-10llu %10u %12.1f %14.2f %12.2f %10.1f %10.1f %10.0f\n",
                 static_cast<unsigned long long>(v), committee, register_us, issue[issue.size() / 2], mib, save_ms,
                 load_ms, peak);
    bench::Json p;
    p.integer("verifiers", v)
        .integer("committee_size", committee)
        .integer("runs", runs)
        .integer("rounds", rounds)
        .num("register_us", register_us)
        .num("issue_ms_per_run_median", issue[issue.size() / 2])
        .integer("state_bytes", state.len)
        .num("save_ms", save_ms)
        .num("load_ms", load_ms)
        .num("peak_rss_mib", peak);
    points += (points.empty() ? "" : ", ") + p.text();
    pot_bytes_free(&state);
    pot_ledger_free(back);
    pot_ledger_free(l);
  }
  if (json) std::printf("{\"bench\": \"ledger\", \"points\": [%s]}\n", points.c_str());
  pot_bytes_free(&task_bytes);
  pot_task_free(task);
  return 0;
}
