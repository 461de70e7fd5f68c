// bench_ledger_dispute - what a step dispute costs on the reference ledger
// (docs/ledger.md 2.12-2.14, docs/PROTOCOL.md 22.1).
//
// What it does: for runs of --steps N (1,000, 100,000 and 1,000,000 by
// default) and arities 2, 4 and 16, a ledger holds a sealed run whose miner
// logged forged states from step N/3 on (real step leaves in a real RFC 6962
// tree), and a registered verifier disputes its last step from S_0. Both
// parties play every round through pot_ledger_apply, the miner with its
// committed leaves and inclusion proofs, the verifier with digests, until
// the record names the forged step. Reports the rounds, the bytes each party
// posts per round (the JSON call text, which is what a chain would carry),
// the median time of a claim_dispute call (the miner's: it verifies k - 1
// proofs), and the dispute's bytes in the saved state.
//
// Usage: bench_ledger_dispute [--json] [--max-steps N]   (runs of 1,000,
// 100,000 and 1,000,000 steps up to N, and N)
// Exit status: 0 when the run completed, 1 for bad options, 2 for a pot error.
//
// Only the public C API (pot.h) is used.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "pot.h"

namespace {

using bench::hex;

nlohmann::json apply(pot_ledger *l, const nlohmann::json &call, const char *what) {
  pot_bytes out{};
  pot_error *err = nullptr;
  bench::check(pot_ledger_apply(&out, l, call.dump().c_str(), &err), err, what);
  nlohmann::json r = nlohmann::json::parse(std::string(reinterpret_cast<const char *>(out.data), out.len));
  pot_bytes_free(&out);
  return r;
}

pot_digest digest_of(const std::string &label) {
  pot_digest d;
  pot_error *err = nullptr;
  bench::check(pot_sha256(&d, label.data(), label.size(), &err), err, "pot_sha256");
  return d;
}

// The state digest the miner logged for step t, and the true one.
pot_digest logged(uint64_t t, uint64_t forged_from) {
  return digest_of((t >= forged_from ? "forged " : "state ") + std::to_string(t));
}
pot_digest truth(uint64_t t) { return digest_of("state " + std::to_string(t)); }

struct Result {
  uint32_t rounds = 0;
  uint64_t found = 0;
  size_t miner_bytes = 0, verifier_bytes = 0;  // per round, the largest
  double claim_ms = 0;                          // the miner's claim_dispute, median
  size_t state_bytes = 0;                       // the open dispute's share of the saved state
};

size_t saved_size(pot_ledger *l) {
  pot_bytes s{};
  pot_error *err = nullptr;
  bench::check(pot_ledger_save(&s, l, &err), err, "pot_ledger_save");
  const size_t n = s.len;
  pot_bytes_free(&s);
  return n;
}

Result play(uint64_t steps, uint32_t arity, pot_tree *log, const std::string &task_hex, const std::string &commitment,
            const std::string &run_id, const pot_digest &s0) {
  const nlohmann::json config = {{"draw_delay", 1},     {"opening_window", 10}, {"commit_window", 10},
                                 {"reveal_window", 10}, {"max_committee_size", 1}, {"min_stake", 1},
                                 {"max_rounds", 1},     {"max_attempts", 1},   {"dispute_window", 10},
                                 {"dispute_arity", arity}};
  pot_ledger *l = nullptr;
  pot_error *err = nullptr;
  bench::check(pot_ledger_new(&l, config.dump().c_str(), &err), err, "pot_ledger_new");
  const std::string miner = hex("miner"), verifier = hex("verifier");
  apply(l, {{"call", "post_task"}, {"caller", hex("owner")}, {"now", 1}, {"task", task_hex}}, "post_task");
  apply(l, {{"call", "register_verifier"}, {"caller", verifier}, {"now", 1}, {"stake", 1}}, "register_verifier");
  apply(l, {{"call", "start_training_commitment"}, {"caller", miner}, {"now", 1}, {"commitment", commitment}},
        "start_training_commitment");
  pot_digest root;
  bench::check(pot_tree_root(&root, log, steps, &err), err, "pot_tree_root");
  apply(l, {{"call", "post_checkpoint_root"}, {"caller", miner}, {"now", 1}, {"run_id", run_id}, {"size", steps},
            {"root", hex(root)}, {"consistency_proof", ""}},
        "post_checkpoint_root");
  const uint64_t forged_from = std::max<uint64_t>(1, steps / 3);
  auto leaf_claim = [&](uint64_t t) {
    uint8_t leaf[POT_STEP_LEAF_SIZE];
    pot_digest run;
    bench::check(pot_digest_from_hex(&run, run_id.c_str(), &err), err, "run id");
    const pot_digest d = logged(t, forged_from);
    bench::check(pot_step_leaf_encode(leaf, &run, t, &d, 1.0, 1.0, &err), err, "pot_step_leaf_encode");
    pot_bytes proof{};
    bench::check(pot_tree_inclusion_proof(&proof, log, t - 1, steps, &err), err, "pot_tree_inclusion_proof");
    nlohmann::json c = {{"step_leaf", hex(leaf, sizeof leaf)}, {"leaf_proof", hex(proof.data, proof.len)}};
    pot_bytes_free(&proof);
    return c;
  };
  const size_t before = saved_size(l);
  const nlohmann::json hi = leaf_claim(steps);
  nlohmann::json r = apply(l,
                           {{"call", "open_dispute"}, {"caller", verifier}, {"now", 2}, {"run_id", run_id},
                            {"lo_leaf", ""}, {"lo_proof", ""}, {"hi_leaf", hi["step_leaf"]},
                            {"hi_proof", hi["leaf_proof"]}, {"claim", hex(truth(steps))}},
                           "open_dispute");
  Result out;
  out.state_bytes = saved_size(l) - before;
  std::vector<double> ms;
  uint64_t now = 2;
  while (!r["ended"].get<bool>()) {
    ++now;
    nlohmann::json leaves = nlohmann::json::array(), digests = nlohmann::json::array();
    for (uint64_t p : r["points"].get<std::vector<uint64_t>>()) {
      leaves.push_back(leaf_claim(p));
      digests.push_back(hex(p == 0 ? s0 : truth(p)));
    }
    const nlohmann::json mc = {{"call", "claim_dispute"}, {"caller", miner}, {"now", now}, {"dispute_id", 0},
                               {"claims", leaves}};
    const nlohmann::json vc = {{"call", "claim_dispute"}, {"caller", verifier}, {"now", now}, {"dispute_id", 0},
                               {"claims", digests}};
    out.miner_bytes = std::max(out.miner_bytes, mc.dump().size());
    out.verifier_bytes = std::max(out.verifier_bytes, vc.dump().size());
    const auto t0 = bench::Clock::now();
    apply(l, mc, "claim_dispute (miner)");
    ms.push_back(bench::seconds_since(t0) * 1e3);
    r = apply(l, vc, "claim_dispute (verifier)");
  }
  out.rounds = r["outcome"]["rounds"];
  out.found = r["outcome"]["step"];
  if (out.found != forged_from) {
    std::fprintf(stderr, "bench_ledger_dispute: the dispute ended at step %llu, the forged step is %llu\n",
                 static_cast<unsigned long long>(out.found), static_cast<unsigned long long>(forged_from));
    std::exit(2);
  }
  std::sort(ms.begin(), ms.end());
  out.claim_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  pot_ledger_free(l);
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false;
  uint64_t max_steps = 1000000;
  CLI::App app{"bench_ledger_dispute: cost of a step dispute on the reference ledger"};
  app.add_flag("--json", json, "JSON object on stdout, report on stderr");
  app.add_option("--max-steps", max_steps, "largest run (1,000, 100,000, 1,000,000 up to it)")
      ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 24));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  std::FILE *report = json ? stderr : stdout;
  pot_error *err = nullptr;
  std::string points;
  std::fprintf(report, "%-10s %6s %7s %6s %15s %18s %10s %9s\n", "steps", "arity", "rounds", "bound",
               "miner B/round", "verifier B/round", "claim ms", "state B");
  std::vector<uint64_t> sizes;
  for (const uint64_t n : {uint64_t{1000}, uint64_t{100000}, uint64_t{1000000}})
    if (n <= max_steps) sizes.push_back(n);
  if (sizes.back() != max_steps) sizes.push_back(max_steps);
  for (const uint64_t steps : sizes) {
    const pot_digest s0 = digest_of("S_0");
    const std::string task_json =
        R"({"owner": ")" + hex("owner") +
        R"(", "spec": {"framework": "pytorch", "framework_version": "1.13.1", "model_program_digest": ")" +
        std::string(64, '1') + R"(", "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
        "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 4, "intra_op_threads": 1,
        "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"},
        "norm_bucket_resolution": 16}, "dataset_root": ")" +
        std::string(64, 'c') + R"(", "dataset_size": 1000, "initial_state": {"published_digest": ")" + hex(s0) +
        R"("}, "schedule": {"run_seeded": {}}, "min_steps": )" + std::to_string(steps) +
        R"(, "max_steps": )" + std::to_string(steps) +
        R"(, "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 1}, "end_height": 1000000})";
    pot_task *task = nullptr;
    bench::check(pot_task_from_json(&task, task_json.c_str(), &err), err, "pot_task_from_json");
    pot_bytes task_bytes{};
    bench::check(pot_task_encode(&task_bytes, task, &err), err, "pot_task_encode");
    const std::string miner = "miner";
    pot_commitment *c = nullptr;
    bench::check(pot_task_commitment(&c, task, reinterpret_cast<const uint8_t *>(miner.data()), miner.size(), steps,
                                     &err),
                 err, "pot_task_commitment");
    pot_bytes cb{};
    bench::check(pot_commitment_encode(&cb, c, &err), err, "pot_commitment_encode");
    pot_digest run;
    bench::check(pot_commitment_run_id(&run, c, &err), err, "pot_commitment_run_id");
    // The miner's log: forged states from steps / 3 on.
    pot_tree *log = nullptr;
    bench::check(pot_tree_open(&log, nullptr, &err), err, "pot_tree_open");
    const uint64_t forged_from = std::max<uint64_t>(1, steps / 3);
    for (uint64_t t = 1; t <= steps; ++t) {
      uint8_t leaf[POT_STEP_LEAF_SIZE];
      const pot_digest d = logged(t, forged_from);
      bench::check(pot_step_leaf_encode(leaf, &run, t, &d, 1.0, 1.0, &err), err, "pot_step_leaf_encode");
      uint64_t index = 0;
      bench::check(pot_tree_append(&index, log, leaf, sizeof leaf, &err), err, "pot_tree_append");
    }
    for (const uint32_t arity : {2u, 4u, 16u}) {
      const Result r = play(steps, arity, log, hex(task_bytes.data, task_bytes.len), hex(cb.data, cb.len), hex(run), s0);
      uint32_t bound = 0;
      bench::check(pot_bisection_rounds(&bound, 0, steps, arity, &err), err, "pot_bisection_rounds");
      std::fprintf(report, "%-10llu %6u %7u %6u %15zu %18zu %10.3f %9zu\n", static_cast<unsigned long long>(steps),
                   arity, r.rounds, bound, r.miner_bytes, r.verifier_bytes, r.claim_ms, r.state_bytes);
      bench::Json p;
      p.integer("steps", steps)
          .integer("arity", arity)
          .integer("rounds", r.rounds)
          .integer("round_bound", bound)
          .integer("miner_bytes_per_round", r.miner_bytes)
          .integer("verifier_bytes_per_round", r.verifier_bytes)
          .num("miner_claim_ms_median", r.claim_ms)
          .integer("open_dispute_state_bytes", r.state_bytes);
      points += (points.empty() ? "" : ", ") + p.text();
    }
    pot_tree_free(log);
    pot_bytes_free(&cb);
    pot_commitment_free(c);
    pot_bytes_free(&task_bytes);
    pot_task_free(task);
  }
  if (json) std::printf("{\"bench\": \"ledger_dispute\", \"points\": [%s]}\n", points.c_str());
  return 0;
}
