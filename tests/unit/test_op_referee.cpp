// Operator traces and the referee without LibTorch (docs/PROTOCOL.md 22.2,
// 22.3): the node and opening encodings against truncation and bounds, and
// every rule of decide_operator over a synthetic trace whose "operators"
// a fake backend runs: the forger loses at the rule its lie breaks, the
// honest party never does, whichever side it plays.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core_test_util.h"
#include "dispute/bisection.h"
#include "dispute/op_referee.h"
#include "dispute/op_trace.h"
#include "hash/rfc6962.h"
#include "hash/state.h"
#include "hash/tensor.h"
#include "merkle/state_proof.h"
#include "op_trace_test_util.h"

namespace pot::op_referee_test {
namespace {

using namespace pot::dispute;
using hash::Digest;
using test::status_of;
using namespace pot::op_trace_test;

struct Played {
  Ruling ruling;
  uint64_t index;
};

// Bisects the honest trace against `forged` (A honest unless forger_is_a)
// and has the referee rule on the node it ends at.
Played play(const std::vector<OpNode> &forged, const NodeOpening *forged_opening, bool forger_is_a,
            FakeBackend &backend, const std::string &forged_content = "") {
  const auto honest = honest_nodes();
  const OpTrace h(honest), g(forged);
  const uint64_t n = std::max(h.size(), g.size());
  auto root = [](const OpTrace &t, uint64_t p) { return t.root(std::min(p, t.size())); };
  const OpTrace &a = forger_is_a ? g : h, &b = forger_is_a ? h : g;
  StepBisection bis(0, n, 2, hash::empty_root(), root(a, n), root(b, n));
  while (!bis.done()) {
    std::vector<Digest> ca, cb;
    for (uint64_t p : bis.points()) {
      ca.push_back(root(a, p));
      cb.push_back(root(b, p));
    }
    bis.play_round(ca, cb);
  }
  const uint64_t i = bis.hi() - 1;
  OperatorDispute d;
  d.index = i;
  d.agreed_root = bis.agreed();
  d.a_root = bis.a_hi();
  d.b_root = bis.b_hi();
  d.pre_state = hash::state_digest(pre_tensors());
  auto content_of = [](const std::vector<OpNode> &t, uint64_t k) {
    return k == 0 ? std::string("w0") : k == 1 ? std::string("w0*2") : std::string("w0*2*3");
    (void)t;
  };
  const NodeOpening ho = i < honest.size() ? open(honest, i, content_of(honest, i)) : NodeOpening{};
  const NodeOpening fo = forged_opening ? *forged_opening
                         : i < forged.size() ? open(forged, i, forged_content.empty() ? content_of(forged, i) : forged_content)
                                             : NodeOpening{};
  return {decide_operator(d, forger_is_a ? fo : ho, forger_is_a ? ho : fo, backend), i};
}

void expect_forger_loses(const Played &p, bool forger_is_a, const char *rule) {
  EXPECT_EQ(p.ruling.rule, rule) << p.ruling.reason;
  EXPECT_EQ(p.ruling.a_loses, forger_is_a) << p.ruling.reason;
  EXPECT_EQ(p.ruling.b_loses, !forger_is_a) << p.ruling.reason;
}

TEST(OpNode, EncodingRoundTripsAndRefusesTruncationAndBounds) {
  OpNode n = honest_nodes()[1];
  OpValue list;
  list.kind = ValueKind::kList;
  list.list = {integer(-5), tensor("x", OpSource{SourceKind::kBatch, 0, 3, "tokens"})};
  OpValue d;
  d.kind = ValueKind::kDouble;
  d.bits = 0x7ff8000000000001ull;  // a NaN payload survives
  n.inputs.push_back(list);
  n.inputs.push_back(d);
  const Bytes b = encode_op_node(n);
  EXPECT_EQ(decode_op_node(b), n);
  EXPECT_EQ(op_node_from_json(nlohmann::json::parse(op_node_json(n))), n);
  for (size_t len = 0; len < b.size(); ++len)
    EXPECT_EQ(status_of([&] { decode_op_node(ByteView(b.data(), len)); }), Status::kMalformed) << len;
  Bytes longer = b;
  longer.push_back(0);
  EXPECT_EQ(status_of([&] { decode_op_node(longer); }), Status::kMalformed);
  OpValue deep = integer(1);
  for (int i = 0; i < 10; ++i) {
    OpValue l;
    l.kind = ValueKind::kList;
    l.list = {deep};
    deep = l;
  }
  OpNode nested = n;
  nested.inputs = {deep};
  EXPECT_EQ(status_of([&] { decode_op_node(encode_op_node(nested)); }), Status::kLimit);
  Bytes bad_tag = b;
  bad_tag[3] ^= 1;
  EXPECT_EQ(status_of([&] { decode_op_node(bad_tag); }), Status::kMalformed);
}

TEST(OpOpening, EncodingRoundTripsAndRefusesTruncation) {
  const NodeOpening o = open(honest_nodes(), 1, "w0*2");
  const Bytes b = o.encode();
  EXPECT_EQ(NodeOpening::decode(b).encode(), b);
  for (size_t len = 0; len < b.size(); len += 7)
    EXPECT_NE(status_of([&] { NodeOpening::decode(ByteView(b.data(), len)); }), Status::kOk) << len;
}

TEST(OpReferee, RefusesADisputeOverEqualRoots) {
  // Nothing to dispute: equal roots are refused.
  const OpTrace t(honest_nodes());
  FakeBackend backend;
  OperatorDispute d{1, t.root(1), t.root(2), t.root(2), hash::state_digest(pre_tensors())};
  const NodeOpening o = open(honest_nodes(), 1, "w0*2");
  EXPECT_EQ(status_of([&] { decide_operator(d, o, o, backend); }), Status::kInvalidArgument);
}

TEST(OpReferee, EveryLieLosesAtItsRuleWhicheverSideTellsIt) {
  for (bool forger_is_a : {true, false}) {
    SCOPED_TRACE(forger_is_a ? "forger is A" : "forger is B");
    {  // A forged result: one operator run.
      auto g = honest_nodes();
      g[1].outputs[0] = tensor("forged");
      FakeBackend be;
      const Played p = play(g, nullptr, forger_is_a, be);
      EXPECT_EQ(p.index, 1u);
      expect_forger_loses(p, forger_is_a, "operator");
      EXPECT_TRUE(p.ruling.executed);
      EXPECT_EQ(be.executed, 1);
      EXPECT_EQ(be.replayed, 0);
    }
    {  // An input that its source does not hold.
      auto g = honest_nodes();
      g[2].inputs[0] = tensor("other", from_node(1));
      FakeBackend be;
      expect_forger_loses(play(g, nullptr, forger_is_a, be), forger_is_a, "source");
    }
    {  // A pre-state tensor that is not S_{t-1}'s.
      auto g = honest_nodes();
      g[0].inputs[0] = tensor("w1", from_state("param/w"));
      FakeBackend be;
      expect_forger_loses(play(g, nullptr, forger_is_a, be), forger_is_a, "source");
    }
    {  // Another operator argument (structure): the step decides.
      auto g = honest_nodes();
      g[1].inputs[1] = integer(7);
      g[1].outputs[0] = tensor("w0*2*7");
      FakeBackend be;
      const Played p = play(g, nullptr, forger_is_a, be);
      expect_forger_loses(p, forger_is_a, "step");
      EXPECT_TRUE(p.ruling.replayed);
      EXPECT_EQ(be.executed, 0);
    }
    {  // A random operator cannot run alone: the step decides.
      auto h = honest_nodes();
      auto g = h;
      g[2].name = "test::random";
      FakeBackend be;
      expect_forger_loses(play(g, nullptr, forger_is_a, be), forger_is_a, "step");
    }
    {  // A trace cut short: its end is opened; the step decides.
      auto g = honest_nodes();
      g.pop_back();
      FakeBackend be;
      const Played p = play(g, nullptr, forger_is_a, be);
      EXPECT_EQ(p.index, 2u);
      expect_forger_loses(p, forger_is_a, "step");
    }
    {  // A longer trace: the honest side opens its end.
      auto g = honest_nodes();
      g.push_back(f_node(tensor("w0*2*3*4", from_node(2)), 5, "w0*2*3*4"));
      FakeBackend be;
      const Played p = play(g, nullptr, forger_is_a, be);
      EXPECT_EQ(p.index, 3u);
      expect_forger_loses(p, forger_is_a, "step");
    }
    {  // An opening that does not prove against the forger's root.
      auto g = honest_nodes();
      g[1].outputs[0] = tensor("forged");
      NodeOpening o = open(honest_nodes(), 1, "w0*2");  // the honest node under the forger's root
      FakeBackend be;
      expect_forger_loses(play(g, &o, forger_is_a, be), forger_is_a, "opening");
    }
  }
}

TEST(OpReferee, PostStateNodeIsCheckedWithoutRunningAnything) {
  auto post = [](const Digest &claimed) {
    OpNode n;
    n.name = std::string(kPostStateOp);
    OpValue name;
    name.kind = ValueKind::kString;
    name.text = "param/w";
    n.inputs = {name, tensor("w0*2*3*4", from_node(2))};
    OpValue d;
    d.kind = ValueKind::kDigest;
    d.digest = claimed;
    n.outputs = {d};
    return n;
  };
  const Digest truth = hash::state_digest(
      {{"param/w", hash::tensor_digest(hash::TensorMeta{"param/w", hash::DType::kF32, {2, 3}}, 24, label("w0*2*3*4"))}});
  auto h = honest_nodes();
  h.push_back(post(truth));
  auto g = h;
  g[3] = post(label("not the state"));
  const OpTrace ht(h), gt(g);
  OperatorDispute d{3, ht.root(3), ht.root(4), gt.root(4), hash::state_digest(pre_tensors())};
  FakeBackend be;
  const Ruling r = decide_operator(d, open(h, 3, "w0*2*3*4"), open(g, 3, "w0*2*3*4"), be);
  EXPECT_EQ(r.rule, "post_state") << r.reason;
  EXPECT_FALSE(r.a_loses);
  EXPECT_TRUE(r.b_loses);
  EXPECT_EQ(be.executed + be.replayed, 0);
}

}  // namespace
}  // namespace pot::op_referee_test
