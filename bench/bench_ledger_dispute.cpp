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
// Then the operator phase (docs/ledger.md 2.15-2.17) on a ledger with a
// referee: after the step phase of a 1,000-step run, both parties commit
// traces of --nodes N (165, 2,000, 20,000) synthetic nodes whose post-state
// node lists 100 tensors, the miner's with a forged result at node N/3; the
// traces are bisected, both open the node (with its producer's opening),
// and the referee rules. Reports the operator rounds, the bytes of a trace
// commitment, of a round's claims and of an opening, the time of open_node,
// and the dispute's bytes in the state in the referee phase.
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

// The operator phase's two traces (docs/PROTOCOL.md 22.2), synthetic:
// node j < n - 1 is aten::mul of node j - 1's result and j, the last node
// the post-state node listing 100 tensors; the miner's trace forges node
// n / 3's result and ends in the miner's digest of the step.
struct Traces {
  uint64_t nodes = 0, forged = 0;
  std::vector<std::string> honest, miner;  // node leaf data
  pot_tree *honest_tree = nullptr, *miner_tree = nullptr;
};

struct OpResult {
  uint32_t rounds = 0, bound = 0;
  size_t commit_bytes = 0, claim_bytes = 0, opening_bytes = 0;  // the largest call of each
  double open_ms = 0;                                            // open_node, the slower of the two
  size_t state_bytes = 0;                                        // in the referee phase
};

// "prefix j", built without string concatenation (GCC 12 warns falsely on
// some of it at -O3).
std::string label(const char *prefix, uint64_t j) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s %llu", prefix, static_cast<unsigned long long>(j));
  return buf;
}

std::string bytes_of(const pot_bytes &b) { return std::string(reinterpret_cast<const char *>(b.data), b.len); }

std::string node_from_json(const nlohmann::json &j) {
  pot_bytes out{};
  pot_error *err = nullptr;
  bench::check(pot_op_node_from_json(&out, j.dump().c_str(), &err), err, "pot_op_node_from_json");
  std::string n = bytes_of(out);
  pot_bytes_free(&out);
  return n;
}

nlohmann::json tensor_value(const std::string &label, const nlohmann::json &source) {
  return {{"tensor",
           {{"dtype", "F32"}, {"shape", {64, 64}}, {"strides", {64, 1}}, {"chunk_root", hex(digest_of(label))},
            {"source", source}}}};
}

pot_tree *tree_of(const std::vector<std::string> &nodes) {
  pot_tree *t = nullptr;
  pot_error *err = nullptr;
  bench::check(pot_tree_open(&t, nullptr, &err), err, "pot_tree_open");
  for (const std::string &n : nodes) {
    uint64_t index = 0;
    bench::check(pot_tree_append(&index, t, n.data(), n.size(), &err), err, "pot_tree_append");
  }
  return t;
}

Traces make_traces(uint64_t n, const pot_digest &honest_digest, const pot_digest &miner_digest) {
  Traces t;
  t.nodes = n;
  t.forged = n / 3;
  for (uint64_t j = 0; j + 1 < n; ++j) {
    const nlohmann::json source =
        j == 0 ? nlohmann::json{{"kind", "none"}} : nlohmann::json{{"kind", "node"}, {"node", j - 1}, {"slot", 0}};
    nlohmann::json node = {{"name", "aten::mul"},
                           {"overload", "Tensor"},
                           {"inputs", {tensor_value(label("r", j - 1), source), {{"int", j}}}},
                           {"outputs", {tensor_value(label("r", j), {{"kind", "none"}})}}};
    t.honest.push_back(node_from_json(node));
    if (j == t.forged) node["outputs"] = {tensor_value("forged", {{"kind", "none"}})};
    t.miner.push_back(node_from_json(node));
  }
  for (const pot_digest *d : {&honest_digest, &miner_digest}) {
    nlohmann::json inputs = nlohmann::json::array();
    for (int i = 0; i < 100; ++i) {
      inputs.push_back({{"string", label("param/t", i).replace(7, 1, "")}});
      inputs.push_back(tensor_value(label("final", i), {{"kind", "node"}, {"node", n - 2}, {"slot", 0}}));
    }
    const nlohmann::json post = {
        {"name", "pot::post_state"}, {"overload", ""}, {"inputs", inputs}, {"outputs", {{{"digest", hex(*d)}}}}};
    (d == &honest_digest ? t.honest : t.miner).push_back(node_from_json(post));
  }
  t.honest_tree = tree_of(t.honest);
  t.miner_tree = tree_of(t.miner);
  return t;
}

// A party's opening of node k (docs/PROTOCOL.md 22.3): the node, its proofs,
// its producer's opening; no tensor bytes (the ledger does not read them).
std::string opening_of(const std::vector<std::string> &nodes, pot_tree *tree, uint64_t k) {
  pot_error *err = nullptr;
  std::string out;
  auto u32 = [&](uint32_t v) { out.append(reinterpret_cast<const char *>(&v), 4); };  // little-endian hosts
  auto u64 = [&](uint64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); };
  auto hashes = [&](const pot_bytes &p) {
    u32(static_cast<uint32_t>(p.len / 32));
    out += bytes_of(p);
  };
  const std::string tag = "pot/v1/op-opening";
  out += static_cast<char>(tag.size());
  out += tag;
  out += '\1';
  u64(nodes[k].size());
  out += nodes[k];
  pot_bytes p{};
  bench::check(pot_tree_inclusion_proof(&p, tree, k, k + 1, &err), err, "pot_tree_inclusion_proof");
  hashes(p);
  pot_bytes_free(&p);
  if (k > 0) bench::check(pot_tree_consistency_proof(&p, tree, k, k + 1, &err), err, "pot_tree_consistency_proof");
  hashes(p);
  pot_bytes_free(&p);
  u32(k > 0 ? 1 : 0);
  if (k > 0) {
    u64(k - 1);
    u64(nodes[k - 1].size());
    out += nodes[k - 1];
    bench::check(pot_tree_inclusion_proof(&p, tree, k - 1, k, &err), err, "pot_tree_inclusion_proof");
    hashes(p);
    pot_bytes_free(&p);
  }
  u32(0);  // state proofs
  u32(0);  // tensors
  return out;
}

// The operator phase of dispute 0 on `l`, in its traces phase at `now`;
// `before` is the state's size before the dispute.
OpResult play_operators(pot_ledger *l, const Traces &t, uint32_t arity, uint64_t now, size_t before) {
  pot_error *err = nullptr;
  OpResult out;
  const std::string miner = hex("miner"), verifier = hex("verifier");
  auto root = [&](pot_tree *tree, uint64_t size) {
    pot_digest d;
    bench::check(pot_tree_root(&d, tree, size, &err), err, "pot_tree_root");
    return hex(d);
  };
  nlohmann::json r;
  ++now;
  for (const bool of_miner : {true, false}) {
    pot_tree *tree = of_miner ? t.miner_tree : t.honest_tree;
    pot_bytes proof{};
    bench::check(pot_tree_inclusion_proof(&proof, tree, t.nodes - 1, t.nodes, &err), err, "pot_tree_inclusion_proof");
    const std::string &last = (of_miner ? t.miner : t.honest).back();
    const nlohmann::json call = {{"call", "commit_trace"}, {"caller", of_miner ? miner : verifier},
                                 {"now", now},            {"dispute_id", 0},
                                 {"size", t.nodes},       {"root", root(tree, t.nodes)},
                                 {"post_node", hex(reinterpret_cast<const uint8_t *>(last.data()), last.size())},
                                 {"post_proof", hex(proof.data, proof.len)}};
    pot_bytes_free(&proof);
    out.commit_bytes = std::max(out.commit_bytes, call.dump().size());
    r = apply(l, call, "commit_trace");
  }
  while (r["phase"] == "operators") {
    ++now;
    for (const bool of_miner : {true, false}) {
      nlohmann::json claims = nlohmann::json::array();
      for (uint64_t p : r["points"].get<std::vector<uint64_t>>())
        claims.push_back(root(of_miner ? t.miner_tree : t.honest_tree, std::min(p, t.nodes)));
      const nlohmann::json call = {{"call", "claim_dispute"}, {"caller", of_miner ? miner : verifier},
                                   {"now", now},             {"dispute_id", 0},
                                   {"claims", claims}};
      out.claim_bytes = std::max(out.claim_bytes, call.dump().size());
      r = apply(l, call, "claim_dispute (operators)");
    }
  }
  out.rounds = r["operators"]["rounds"];
  bench::check(pot_bisection_rounds(&out.bound, 0, t.nodes, arity, &err), err, "pot_bisection_rounds");
  if (r["node"] != t.forged) {
    std::fprintf(stderr, "bench_ledger_dispute: the operator bisection ended at node %s, the forged one is %llu\n",
                 r["node"].dump().c_str(), static_cast<unsigned long long>(t.forged));
    std::exit(2);
  }
  ++now;
  for (const bool of_miner : {true, false}) {
    const std::string o = opening_of(of_miner ? t.miner : t.honest, of_miner ? t.miner_tree : t.honest_tree, t.forged);
    const nlohmann::json call = {{"call", "open_node"}, {"caller", of_miner ? miner : verifier}, {"now", now},
                                 {"dispute_id", 0},     {"opening", hex(reinterpret_cast<const uint8_t *>(o.data()), o.size())}};
    out.opening_bytes = std::max(out.opening_bytes, call.dump().size());
    const auto t0 = bench::Clock::now();
    r = apply(l, call, "open_node");
    out.open_ms = std::max(out.open_ms, bench::seconds_since(t0) * 1e3);
  }
  if (r["phase"] != "referee") {
    std::fprintf(stderr, "bench_ledger_dispute: after the openings the dispute is %s, not with the referee\n",
                 r.dump().c_str());
    std::exit(2);
  }
  out.state_bytes = saved_size(l) - before;
  r = apply(l,
            {{"call", "rule_dispute"}, {"caller", hex("referee")}, {"now", now + 1}, {"dispute_id", 0},
             {"miner_loses", true}, {"challenger_loses", false}, {"rule", "operator"}},
            "rule_dispute");
  if (r["outcome"]["losers"] != nlohmann::json::array({"miner"})) std::exit(2);
  return out;
}

Result play(uint64_t steps, uint32_t arity, pot_tree *log, const std::string &task_hex, const std::string &commitment,
            const std::string &run_id, const pot_digest &s0, const Traces *traces = nullptr,
            OpResult *op = nullptr) {
  nlohmann::json config = {{"draw_delay", 1},     {"opening_window", 10}, {"commit_window", 10},
                           {"reveal_window", 10}, {"max_committee_size", 1}, {"min_stake", 1},
                           {"max_rounds", 1},     {"max_attempts", 1},   {"dispute_window", 10},
                           {"dispute_arity", arity}, {"task_bond", 1},   {"miner_bond", 1},
                           {"dispute_bond", 1},      {"max_task_blocks", UINT64_MAX}, {"max_open_tasks", 1},
                           {"miner_grace", 0}};
  if (traces) config["referee"] = hex("referee");
  pot_ledger *l = nullptr;
  pot_error *err = nullptr;
  bench::check(pot_ledger_new(&l, config.dump().c_str(), &err), err, "pot_ledger_new");
  const std::string miner = hex("miner"), verifier = hex("verifier");
  for (const std::string &who : {hex("owner"), miner, verifier})
    apply(l, {{"call", "deposit"}, {"identity", who}, {"now", 1}, {"amount", 1}}, "deposit");
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
    bench::check(pot_step_leaf_encode(leaf, &run, t, &d, &d, 1.0, 1.0, &err), err, "pot_step_leaf_encode");
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
  while (!r["ended"].get<bool>() && (!traces || r["phase"] == "steps")) {
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
  if (traces) {
    out.rounds = r["rounds"];
    out.found = r["hi"];
  } else {
    out.rounds = r["outcome"]["rounds"];
    out.found = r["outcome"]["step"];
  }
  if (out.found != forged_from) {
    std::fprintf(stderr, "bench_ledger_dispute: the dispute ended at step %llu, the forged step is %llu\n",
                 static_cast<unsigned long long>(out.found), static_cast<unsigned long long>(forged_from));
    std::exit(2);
  }
  std::sort(ms.begin(), ms.end());
  out.claim_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  if (traces) *op = play_operators(l, *traces, arity, now, before);
  pot_ledger_free(l);
  return out;
}

// A task of `steps` steps, the miner's commitment and its log: forged
// states from steps / 3 on.
struct Setup {
  pot_digest s0, run;
  std::string task_hex, commitment_hex;
  pot_tree *log = nullptr;
};

Setup make_setup(uint64_t steps) {
  pot_error *err = nullptr;
  Setup out;
  const pot_digest s0 = digest_of("S_0");
  out.s0 = s0;
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
  pot_tree *&log = out.log;
  bench::check(pot_tree_open(&log, nullptr, &err), err, "pot_tree_open");
  const uint64_t forged_from = std::max<uint64_t>(1, steps / 3);
  for (uint64_t t = 1; t <= steps; ++t) {
    uint8_t leaf[POT_STEP_LEAF_SIZE];
    const pot_digest d = logged(t, forged_from);
    bench::check(pot_step_leaf_encode(leaf, &run, t, &d, &d, 1.0, 1.0, &err), err, "pot_step_leaf_encode");
    uint64_t index = 0;
    bench::check(pot_tree_append(&index, log, leaf, sizeof leaf, &err), err, "pot_tree_append");
  }
  out.run = run;
  out.task_hex = hex(task_bytes.data, task_bytes.len);
  out.commitment_hex = hex(cb.data, cb.len);
  pot_bytes_free(&cb);
  pot_commitment_free(c);
  pot_bytes_free(&task_bytes);
  pot_task_free(task);
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
    const Setup su = make_setup(steps);
    for (const uint32_t arity : {2u, 4u, 16u}) {
      const Result r = play(steps, arity, su.log, su.task_hex, su.commitment_hex, hex(su.run), su.s0);
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
    pot_tree_free(su.log);
  }
  // The operator phase, after the step phase of a 1,000-step run.
  std::fprintf(report, "\n%-10s %6s %10s %6s %14s %14s %12s %11s %9s\n", "nodes", "arity", "op rounds", "bound",
               "commit B", "claims B", "opening B", "open ms", "state B");
  std::string op_points;
  const Setup su = make_setup(1000);
  for (const uint64_t nodes : {uint64_t{165}, uint64_t{2000}, uint64_t{20000}}) {
    const Traces t = make_traces(nodes, truth(1000 / 3), logged(1000 / 3, 1000 / 3));
    for (const uint32_t arity : {2u, 16u}) {
      OpResult o;
      play(1000, arity, su.log, su.task_hex, su.commitment_hex, hex(su.run), su.s0, &t, &o);
      std::fprintf(report, "%-10llu %6u %10u %6u %14zu %14zu %12zu %11.3f %9zu\n",
                   static_cast<unsigned long long>(nodes), arity, o.rounds, o.bound, o.commit_bytes, o.claim_bytes,
                   o.opening_bytes, o.open_ms, o.state_bytes);
      bench::Json p;
      p.integer("nodes", nodes)
          .integer("arity", arity)
          .integer("op_rounds", o.rounds)
          .integer("op_round_bound", o.bound)
          .integer("commit_trace_bytes", o.commit_bytes)
          .integer("claim_bytes_per_round", o.claim_bytes)
          .integer("open_node_bytes", o.opening_bytes)
          .num("open_node_ms", o.open_ms)
          .integer("referee_phase_state_bytes", o.state_bytes);
      op_points += (op_points.empty() ? "" : ", ") + p.text();
    }
    pot_tree_free(t.honest_tree);
    pot_tree_free(t.miner_tree);
  }
  pot_tree_free(su.log);
  if (json)
    std::printf("{\"bench\": \"ledger_dispute\", \"points\": [%s], \"operator_points\": [%s]}\n", points.c_str(),
                op_points.c_str());
  return 0;
}
