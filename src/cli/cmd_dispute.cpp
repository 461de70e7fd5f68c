// pot dispute: the refereed dispute's calls (docs/PROTOCOL.md 22) through the
// C API. `points` needs no LibTorch; `trace`, `open` and `decide` replay a
// step and exit 3 with POT_E_UNSUPPORTED in a libpot built without it.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "cli_util.h"

namespace pot_cli {

namespace {

std::vector<uint8_t> take_bytes(pot_bytes &b) {
  std::vector<uint8_t> v(b.data, b.data + b.len);
  pot_bytes_free(&b);
  return v;
}

void add_dispute_points(CLI::App *d) {
  // pot dispute points
  struct Points {
    uint64_t lo = 0, hi = 0;
    uint32_t arity = 2;
    bool json = false;
  };
  auto po = std::make_shared<Points>();
  CLI::App *pts = d->add_subcommand("points", "The points of a bisection round over (LO, HI] and the most rounds");
  pts->add_option("--lo", po->lo, "the agreed end")->required();
  pts->add_option("--hi", po->hi, "the disputed end")->required();
  pts->add_option("--arity", po->arity, "k, 2..256 (2)");
  pts->add_flag("--json", po->json, "print JSON");
  pts->callback([po] {
    pot_error *err = nullptr;
    std::vector<uint64_t> points(POT_BISECTION_MAX_POINTS);
    size_t count = points.size();
    uint32_t rounds = 0;
    check(pot_bisection_points(points.data(), &count, po->lo, po->hi, po->arity, &err), &err, "points");
    check(pot_bisection_rounds(&rounds, po->lo, po->hi, po->arity, &err), &err, "rounds");
    points.resize(count);
    std::string line;
    for (uint64_t p : points) line += (line.empty() ? "" : " ") + std::to_string(p);
    emit(po->json, {{"points", points}, {"rounds", rounds}}, {line, std::to_string(rounds)});
  });
}

void add_dispute_leaves(CLI::App *d) {
  // pot dispute leaves
  struct Leaves {
    std::string dir;
    std::vector<uint64_t> steps;
    uint64_t size = 0;
    bool json = false;
  };
  auto lo = std::make_shared<Leaves>();
  CLI::App *lv = d->add_subcommand(
      "leaves", "A miner's committed leaves and proofs, for the ledger's dispute calls (checkpoint directory)");
  lv->add_option("ckpt_dir", lo->dir, "the recorder's checkpoint directory")->required();
  lv->add_option("--step", lo->steps, "a step (repeatable, in the order to claim them)")->required();
  lv->add_option("--size", lo->size, "prove against the log's first N leaves (default: all)");
  lv->add_flag("--json", lo->json, "print JSON");
  lv->callback([lo] {
    pot_error *err = nullptr;
    pot_checkpoints *c = nullptr;
    check(pot_checkpoints_open(&c, lo->dir.c_str(), &err), &err, lo->dir.c_str());
    std::unique_ptr<pot_checkpoints, decltype(&pot_checkpoints_free)> guard(c, pot_checkpoints_free);
    const uint64_t size = lo->size ? lo->size : pot_checkpoints_size(c);
    nlohmann::json claims = nlohmann::json::array();
    std::vector<std::string> plain;
    for (uint64_t step : lo->steps) {
      pot_bytes leaf{}, proof{};
      check(pot_checkpoints_leaf(&leaf, &proof, c, step, size, &err), &err, "leaf");
      const std::vector<uint8_t> lb = take_bytes(leaf), pb = take_bytes(proof);
      const std::string l = hex(lb.data(), lb.size()), p = hex(pb.data(), pb.size());
      claims.push_back({{"step_leaf", l}, {"leaf_proof", p}});
      plain.push_back(std::to_string(step) + " " + l + " " + p);
    }
    emit(lo->json, {{"claims", claims}}, plain);
  });
}

void add_dispute_trace(CLI::App *d) {
  // pot dispute trace
  struct Trace {
    ReplayStep step;
    std::string out;
    std::vector<uint64_t> roots;
  };
  auto to = std::make_shared<Trace>();
  CLI::App *tr = d->add_subcommand("trace", "Replay a step and record its operator trace (LibTorch)");
  add_step_options(tr, to->step);
  tr->add_option("--root-at", to->roots, "also print the root of the first N nodes (repeatable)");
  tr->add_option("--out", to->out, "write the trace: a JSON array of the nodes' leaf data (hex)");
  tr->callback([to] {
    const auto l = load_step(to->step);
    pot_error *err = nullptr;
    pot_op_trace *t = nullptr;
    check(pot_replay_trace(&t, l->replay.get(), l->input.get(), &err), &err, "trace");
    std::unique_ptr<pot_op_trace, decltype(&pot_op_trace_free)> guard(t, pot_op_trace_free);
    uint64_t n = 0;
    check(pot_op_trace_size(&n, t, &err), &err, "size");
    pot_digest root;
    check(pot_op_trace_root(&root, t, n, &err), &err, "root");
    pot_replay_result res = POT_REPLAY_RESULT_INIT;
    check(pot_op_trace_replay_result(&res, t, &err), &err, "result");
    nlohmann::json roots = nlohmann::json::object();
    std::vector<std::string> plain{std::to_string(n), hex(root)};
    for (uint64_t p : to->roots) {
      pot_digest r;
      check(pot_op_trace_root(&r, t, p, &err), &err, "--root-at");
      roots[std::to_string(p)] = hex(r);
      plain.push_back(std::to_string(p) + " " + hex(r));
    }
    if (!to->out.empty()) {
      nlohmann::json nodes = nlohmann::json::array();
      for (uint64_t i = 0; i < n; ++i) {
        pot_bytes b{};
        check(pot_op_trace_node(&b, t, i, &err), &err, "node");
        const auto v = take_bytes(b);
        nodes.push_back(hex(v.data(), v.size()));
      }
      const std::string text = nodes.dump() + "\n";
      write_file(to->out, std::vector<uint8_t>(text.begin(), text.end()));
    }
    emit(to->step.json,
         {{"nodes", n}, {"root", hex(root)}, {"roots", roots}, {"state_digest", hex(res.post_state_digest)}}, plain);
  });
}

void add_dispute_node(CLI::App *d) {
  // pot dispute node
  struct Node {
    std::string hex_or_file;
  };
  auto no = std::make_shared<Node>();
  CLI::App *nd = d->add_subcommand("node", "Decode a node's leaf data to JSON");
  nd->add_option("NODE", no->hex_or_file, "leaf data: hex, or a file holding the bytes")->required();
  nd->callback([no] {
    std::ifstream probe(no->hex_or_file);
    const auto bytes = probe ? read_file(no->hex_or_file) : unhex(no->hex_or_file, "NODE");
    pot_error *err = nullptr;
    pot_bytes b{};
    check(pot_op_node_json(&b, bytes.data(), bytes.size(), &err), &err, "node");
    const auto v = take_bytes(b);
    std::cout << std::string(v.begin(), v.end()) << "\n";
  });
}

void add_dispute_open(CLI::App *d) {
  // pot dispute open
  struct Open {
    ReplayStep step;
    uint64_t node = 0;
    std::string out;
  };
  auto oo = std::make_shared<Open>();
  CLI::App *op = d->add_subcommand("open", "Open node K of this party's trace of the step (LibTorch)");
  add_step_options(op, oo->step);
  op->add_option("--node", oo->node, "the first differing node (0-based)")->required();
  op->add_option("--out", oo->out, "opening file to write")->required();
  op->callback([oo] {
    const auto l = load_step(oo->step);
    pot_error *err = nullptr;
    pot_bytes b{};
    check(pot_replay_open_op_node(&b, l->replay.get(), l->input.get(), oo->node, &err), &err, "open");
    const auto v = take_bytes(b);
    write_file(oo->out, v);
    emit(oo->step.json, {{"node", oo->node}, {"bytes", v.size()}, {"out", oo->out}}, {std::to_string(v.size())});
  });
}

void add_dispute_decide(CLI::App *d) {
  // pot dispute decide
  struct Decide {
    ReplayStep step;
    uint64_t node = 0;
    std::string pre_digest, agreed, a_root, b_root, a_opening, b_opening;
  };
  auto dd = std::make_shared<Decide>();
  CLI::App *dc = d->add_subcommand("decide", "The referee's ruling on node K (LibTorch); prints who loses");
  add_step_options(dc, dd->step);
  dc->add_option("--pre-state-digest", dd->pre_digest, "the agreed digest of S_{t-1} (hex)")->required();
  dc->add_option("--node", dd->node, "the first differing node (0-based)")->required();
  dc->add_option("--agreed-root", dd->agreed, "the agreed root of the first K nodes (hex)")->required();
  dc->add_option("--a-root", dd->a_root, "A's root of the first K + 1 nodes (hex)")->required();
  dc->add_option("--b-root", dd->b_root, "B's root of the first K + 1 nodes (hex)")->required();
  dc->add_option("--a-opening", dd->a_opening, "A's opening file")->required();
  dc->add_option("--b-opening", dd->b_opening, "B's opening file")->required();
  dc->callback([dd] {
    const auto l = load_step(dd->step);
    const pot_digest pre = digest_arg(dd->pre_digest, "--pre-state-digest"),
                     agreed = digest_arg(dd->agreed, "--agreed-root"), a = digest_arg(dd->a_root, "--a-root"),
                     b = digest_arg(dd->b_root, "--b-root");
    const auto ao = read_file(dd->a_opening), bo = read_file(dd->b_opening);
    pot_error *err = nullptr;
    pot_bytes rb{};
    check(pot_referee_decide_op(&rb, l->replay.get(), l->input.get(), &pre, dd->node, &agreed, &a, &b, ao.data(),
                                ao.size(), bo.data(), bo.size(), &err),
          &err, "decide");
    const auto v = take_bytes(rb);
    const auto ruling = nlohmann::json::parse(v.begin(), v.end());
    const bool a_loses = ruling["a_loses"], b_loses = ruling["b_loses"];
    emit(dd->step.json, ruling,
         {std::string(a_loses && b_loses ? "both lose" : a_loses ? "A loses" : b_loses ? "B loses" : "no one loses") +
              " (rule " + ruling["rule"].get<std::string>() + ")",
          ruling["reason"].get<std::string>()});
  });
}

}  // namespace

void add_dispute_commands(CLI::App &app) {
  CLI::App *d = app.add_subcommand("dispute", "Refereed disputes: bisections, operator traces, the referee");
  d->require_subcommand(1);
  add_dispute_points(d);
  add_dispute_leaves(d);
  add_dispute_trace(d);
  add_dispute_node(d);
  add_dispute_open(d);
  add_dispute_decide(d);
}

}  // namespace pot_cli
