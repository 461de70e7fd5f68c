// bench_dispute - what the operator phase of a refereed dispute costs
// (docs/PROTOCOL.md 22.2, 22.3; docs/performance.md "Refereed disputes") on a
// run directory of tests/replay/train.py, through the public C API:
//
//   * a plain replay of step t (pot_replay_step) and a traced one
//     (pot_replay_trace): the trace's overhead; its nodes and bytes;
//   * the operator bisection: rounds and bytes per round at arities 2, 4, 16;
//   * a party's opening of a node (pot_replay_open_op_node): time, bytes;
//   * the referee (pot_referee_decide_op) on the heaviest nodes, each forged
//     in its first result: the ruling's time next to a replay of the step,
//     and the same call on an opening that fails rule 1 (no operator runs:
//     the fixed cost of loading S_{t-1}, the batch and the proofs).
//
// Usage: bench_dispute RUN_DIR [--step T] [--nodes N] [--repeat R]
// Needs a libpot with LibTorch.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "bench_util.h"

namespace {

using nlohmann::json;

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string numbered(const std::string &dir, uint64_t t) {
  char name[48];
  std::snprintf(name, sizeof name, "/%06llu.safetensors", static_cast<unsigned long long>(t));
  return dir + name;
}

std::vector<uint8_t> take(pot_bytes &b) {
  std::vector<uint8_t> v(b.data, b.data + b.len);
  pot_bytes_free(&b);
  return v;
}

// Elements of a node's tensors: a proxy for its operator's work.
uint64_t volume(const json &values) {
  uint64_t n = 0;
  for (const json &v : values) {
    if (v.contains("tensor")) {
      uint64_t e = 1;
      for (const json &d : v["tensor"]["shape"]) e *= d.get<uint64_t>();
      n += e;
    } else if (v.contains("list")) {
      n += volume(v["list"]);
    }
  }
  return n;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_dispute RUN_DIR [--step T] [--nodes N] [--repeat R]\n");
    return 2;
  }
  const std::string dir = argv[1];
  uint64_t step = 2;
  int nodes_to_try = 4, repeat = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--step") step = std::stoull(argv[i + 1]);
    else if (a == "--nodes") nodes_to_try = std::stoi(argv[i + 1]);
    else if (a == "--repeat") repeat = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (!pot_replay_available()) {
    std::fprintf(stderr, "bench_dispute: this libpot was built without LibTorch\n");
    return 2;
  }
  pot_error *err = nullptr;
  const json meta = json::parse(read_file(dir + "/run.json"));
  const json schedule = json::parse(read_file(dir + "/schedule.json"));
  pot_spec *spec = nullptr;
  bench::check(pot_spec_from_json(&spec, read_file(dir + "/spec.json").c_str(), &err), err, "spec");
  pot_replay *replay = nullptr;
  bench::check(pot_replay_new(&replay, spec, (dir + "/program.pt").c_str(), &err), err, "replay");

  std::vector<uint64_t> indices;
  std::vector<uint32_t> sizes;
  for (const json &mb : schedule[step - 1]) {
    sizes.push_back(static_cast<uint32_t>(mb.size()));
    for (const json &i : mb) indices.push_back(i.get<uint64_t>());
  }
  pot_bytes eb{};
  bench::check(pot_schedule_entry_encode(&eb, step, indices.data(), indices.size(), sizes.data(), sizes.size(),
                                         meta["dataset_size"].get<uint64_t>(), &err),
               err, "entry");
  const std::vector<uint8_t> entry = take(eb);
  pot_digest run_id;
  bench::check(pot_digest_from_hex(&run_id, meta["run_id"].get<std::string>().c_str(), &err), err, "run id");
  const std::string pre = numbered(dir + "/states", step - 1);
  // The step's inputs, built once (as a referee would) and shared by every call timed below.
  pot_step_input *input = nullptr;
  bench::check(pot_step_input_new(&input, &run_id, pre.c_str(), entry.data(), entry.size(), &err), err, "input");
  for (uint64_t i : indices) {
    const std::string s = read_file(numbered(dir + "/samples", i));
    bench::check(pot_step_input_add_sample(input, reinterpret_cast<const uint8_t *>(s.data()), s.size(), &err), err,
                 "sample");
  }
  pot_digest pre_digest;
  bench::check(pot_safetensors_digest_file(&pre_digest, pre.c_str(), 0, &err), err, "pre digest");

  std::printf("load average at start: %.2f (figures are comparable only on an idle machine)\n", [] {
    double l[1] = {0};
    return getloadavg(l, 1) == 1 ? l[0] : -1.0;
  }());
  std::printf("run: %s, model %s, %s, step %llu, %s intra-op thread(s)\n", dir.c_str(),
              meta["model"].get<std::string>().c_str(), meta["optim"].get<std::string>().c_str(),
              static_cast<unsigned long long>(step), std::to_string(meta["threads"].get<int>()).c_str());

  // Plain and traced replays.
  std::vector<double> plain, traced;
  pot_op_trace *trace = nullptr;
  for (int r = 0; r < repeat; ++r) {
    pot_replay_result res = POT_REPLAY_RESULT_INIT;
    auto t0 = bench::Clock::now();
    bench::check(pot_replay_step(&res, replay, input, nullptr, &err), err, "replay");
    plain.push_back(bench::seconds_since(t0));
    pot_op_trace_free(trace);
    trace = nullptr;
    t0 = bench::Clock::now();
    bench::check(pot_replay_trace(&trace, replay, input, &err), err, "trace");
    traced.push_back(bench::seconds_since(t0));
  }
  std::sort(plain.begin(), plain.end());
  std::sort(traced.begin(), traced.end());
  const double step_s = plain[plain.size() / 2], trace_s = traced[traced.size() / 2];
  uint64_t n = 0;
  bench::check(pot_op_trace_size(&n, trace, &err), err, "size");
  uint64_t leaf_bytes = 0;
  std::vector<std::vector<uint8_t>> leaves;
  std::vector<json> decoded;
  for (uint64_t i = 0; i < n; ++i) {
    pot_bytes b{};
    bench::check(pot_op_trace_node(&b, trace, i, &err), err, "node");
    leaves.push_back(take(b));
    leaf_bytes += leaves.back().size();
    pot_bytes j{};
    bench::check(pot_op_node_json(&j, leaves.back().data(), leaves.back().size(), &err), err, "json");
    const std::vector<uint8_t> text = take(j);
    decoded.push_back(json::parse(text.begin(), text.end()));
  }
  std::printf("\n%-52s %10s\n", "", "median");
  std::printf("%-52s %9.3fs\n", "replay of the step (pot_replay_step)", step_s);
  std::printf("%-52s %9.3fs = %.2fx\n", "traced replay (pot_replay_trace)", trace_s, trace_s / step_s);
  std::printf("trace: %llu nodes, %llu bytes of leaf data (%.0f bytes a node)\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(leaf_bytes), static_cast<double>(leaf_bytes) / static_cast<double>(n));
  json out = {{"step_s", step_s}, {"trace_s", trace_s}, {"nodes", n}, {"leaf_bytes", leaf_bytes}};
  for (uint32_t k : {2u, 4u, 16u}) {
    uint32_t rounds = 0;
    bench::check(pot_bisection_rounds(&rounds, 0, n, k, &err), err, "rounds");
    std::printf("operator bisection, arity %2u: %u rounds, %u bytes per party per round\n", k, rounds, 32 * (k - 1));
  }

  // The heaviest executable nodes (by tensor elements), each forged.
  std::vector<std::pair<uint64_t, uint64_t>> by_volume;
  for (uint64_t i = 0; i + 1 < n; ++i) {
    const std::string name = decoded[i]["name"];
    if (name.find("dropout") != std::string::npos) continue;
    bool has_tensor_out = false;
    for (const json &v : decoded[i]["outputs"]) has_tensor_out |= v.contains("tensor");
    if (has_tensor_out) by_volume.push_back({volume(decoded[i]["inputs"]) + volume(decoded[i]["outputs"]), i});
  }
  std::sort(by_volume.rbegin(), by_volume.rend());
  // The two largest matrix products first (the most arithmetic), then the
  // largest others (the most bytes).
  std::stable_partition(by_volume.begin(), by_volume.end(), [&, taken = 0](const auto &v) mutable {
    const std::string name = decoded[v.second]["name"];
    const bool product = name == "aten::mm" || name == "aten::addmm" || name == "aten::linear" ||
                         name == "aten::matmul" || name == "aten::bmm";
    return product && taken++ < 2;
  });
  pot_tree *tree = nullptr;
  std::printf("\n%-6s %-34s %10s %12s %12s %9s\n", "node", "operator", "opening", "ruling", "rule 1 only",
              "op/step");
  json rows = json::array();
  for (int c = 0; c < nodes_to_try && c < static_cast<int>(by_volume.size()); ++c) {
    const uint64_t k = by_volume[static_cast<size_t>(c)].second;
    // The forger's node k: its first tensor result's chunk root changed.
    json forged_json = decoded[k];
    for (json &v : forged_json["outputs"])
      if (v.contains("tensor")) {
        v["tensor"]["chunk_root"] = std::string(64, 'f');
        break;
      }
    pot_bytes fb{};
    bench::check(pot_op_node_from_json(&fb, forged_json.dump().c_str(), &err), err, "forge");
    const std::vector<uint8_t> forged = take(fb);
    bench::check(pot_tree_open(&tree, nullptr, &err), err, "tree");
    for (uint64_t i = 0; i <= k; ++i) {
      uint64_t idx;
      const auto &leaf = i == k ? forged : leaves[i];
      bench::check(pot_tree_append(&idx, tree, leaf.data(), leaf.size(), &err), err, "append");
    }
    pot_digest agreed, honest_root, forged_root;
    bench::check(pot_op_trace_root(&agreed, trace, k, &err), err, "root");
    bench::check(pot_op_trace_root(&honest_root, trace, k + 1, &err), err, "root");
    bench::check(pot_tree_root(&forged_root, tree, k + 1, &err), err, "root");
    auto t0 = bench::Clock::now();
    pot_bytes ob{};
    bench::check(pot_replay_open_op_node(&ob, replay, input, k, &err), err, "open");
    const double open_s = bench::seconds_since(t0);
    const std::vector<uint8_t> honest = take(ob);
    // The forger's opening: the honest one with its node and proofs
    // swapped in place (same sizes: one chunk root differs).
    std::vector<uint8_t> forger = honest;
    const size_t at = 1 + 17 + 1 + 8;  // tag, has_node, length
    std::copy(forged.begin(), forged.end(), forger.begin() + static_cast<std::ptrdiff_t>(at));
    pot_bytes pb{};
    bench::check(pot_tree_inclusion_proof(&pb, tree, k, k + 1, &err), err, "proof");
    const std::vector<uint8_t> inc = take(pb);
    size_t p = at + forged.size() + 4;
    std::copy(inc.begin(), inc.end(), forger.begin() + static_cast<std::ptrdiff_t>(p));
    p += inc.size() + 4;
    if (k > 0) {
      bench::check(pot_tree_consistency_proof(&pb, tree, k, k + 1, &err), err, "proof");
      const std::vector<uint8_t> cons = take(pb);
      std::copy(cons.begin(), cons.end(), forger.begin() + static_cast<std::ptrdiff_t>(p));
    }
    auto decide = [&](const std::vector<uint8_t> &b_opening, json &ruling) {
      pot_bytes rb{};
      const auto t = bench::Clock::now();
      bench::check(pot_referee_decide_op(&rb, replay, input, &pre_digest, k, &agreed, &honest_root, &forged_root,
                                         honest.data(), honest.size(), b_opening.data(), b_opening.size(), &err),
                   err, "decide");
      const double s = bench::seconds_since(t);
      const std::vector<uint8_t> text = take(rb);
      ruling = json::parse(text.begin(), text.end());
      return s;
    };
    json ruling, bad_ruling;
    const double decide_s = decide(forger, ruling);
    std::vector<uint8_t> broken = forger;
    broken[at + forged.size() + 4] ^= 1;  // its inclusion proof no longer proves: rule 1, nothing runs
    const double rule1_s = decide(broken, bad_ruling);
    if (ruling["b_loses"] != true || ruling["a_loses"] != false || bad_ruling["rule"] != "opening") {
      std::fprintf(stderr, "error: unexpected ruling %s / %s\n", ruling.dump().c_str(), bad_ruling.dump().c_str());
      return 1;
    }
    std::string name = decoded[k]["name"].get<std::string>();
    const std::string overload = decoded[k]["overload"].get<std::string>();
    if (!overload.empty()) name.append(1, '.').append(overload);
    std::printf("%-6llu %-34s %8zu B %10.3fs %11.3fs %8.1f%%  (%s)\n", static_cast<unsigned long long>(k),
                name.c_str(), honest.size(), decide_s, rule1_s, 100 * std::max(0.0, decide_s - rule1_s) / step_s,
                ruling["rule"].get<std::string>().c_str());
    if (ruling["rule"] != "operator") std::printf("       %s\n", ruling["reason"].get<std::string>().c_str());
    rows.push_back({{"node", k}, {"op", name}, {"opening_bytes", honest.size()}, {"opening_s", open_s},
                    {"decide_s", decide_s}, {"rule1_s", rule1_s}, {"rule", ruling["rule"]}});
    pot_tree_free(tree);
    tree = nullptr;
  }
  std::printf("(ruling: the referee's call on a forged result; rule 1 only: the same call whose forged opening\n"
              " fails its proof, so no operator runs; op/step: their difference over a replay of the step)\n");
  out["referee"] = rows;
  std::printf("%s\n", out.dump().c_str());
  pot_op_trace_free(trace);
  pot_step_input_free(input);
  pot_replay_free(replay);
  pot_spec_free(spec);
  return 0;
}
