// The operator phase of a ledger dispute (docs/ledger.md 2.15-2.17) over a
// synthetic trace (op_trace_test_util.h): the step found, each party's
// trace bound to its digest of S_t, the operator bisection, the openings
// the ledger rules on, and the referee's restricted ruling. Each attack is
// played with the forger on either side: the forger loses at the rule its
// lie breaks, the honest party never does, and a silent party loses at the
// deadline. Every refusal leaves the state unchanged; the state round-trips
// in every phase.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <random>
#include <string>

#include "commit/step_leaf.h"
#include "core_test_util.h"
#include "game/ledger.h"
#include "hash/rfc6962.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"
#include "op_trace_test_util.h"
#include "pot/v2/ledger.pb.h"
#include "task_test_util.h"

namespace pot::ledger_operator_test {

using namespace pot::op_trace_test;
using game::DisputeEnd;
using game::DisputePhase;
using game::DisputeProgress;
using game::DisputeRule;
using game::LeafClaim;
using game::Ledger;
using game::LedgerConfig;
using test::status_of;

Bytes ident(const std::string &s) { return Bytes(s.begin(), s.end()); }

// The post-state node listing "param/w" with `content`, written by node
// `from`, giving `digest` (the true state digest of that tensor unless told).
OpNode post_node(const std::string &content, uint64_t from, std::optional<Digest> digest = std::nullopt) {
  OpNode n;
  n.name = std::string(kPostStateOp);
  OpValue name;
  name.kind = ValueKind::kString;
  name.text = "param/w";
  n.inputs = {name, tensor(content, from_node(from))};
  OpValue d;
  d.kind = ValueKind::kDigest;
  d.digest = digest ? *digest
                    : hash::state_digest({{"param/w", hash::tensor_digest(hash::TensorMeta{"param/w", hash::DType::kF32,
                                                                                          {2, 3}},
                                                                         24, label(content))}});
  n.outputs = {d};
  return n;
}

// The true trace of the disputed step: f(w, 2), f(., 3), f(., 4), post-state.
std::vector<OpNode> true_trace() {
  auto t = honest_nodes();
  t.push_back(post_node("w0*2*3*4", 2));
  return t;
}

Digest post_digest(const std::vector<OpNode> &t) { return t.back().outputs.at(0).digest; }

// The content of node k's input tensor in trace t (what its opening carries).
std::string input_content(const std::vector<OpNode> &t, uint64_t k) {
  (void)t;
  static const char *contents[] = {"w0", "w0*2", "w0*2*3", "w0*2*3*4"};
  return k < 4 ? contents[k] : "none";
}

// A backend whose true trace is true_trace() (post-state node included).
class Backend : public FakeBackend {
 public:
  std::optional<Bytes> true_node(uint64_t index) override {
    ++replayed;
    const auto t = true_trace();
    if (index >= t.size()) return std::nullopt;
    return encode_op_node(t[index]);
  }
};

LedgerConfig config(bool with_referee = true, uint64_t window = 5) {
  LedgerConfig c;
  c.opening_window = c.commit_window = c.reveal_window = 10;
  c.max_committee_size = 8;
  c.max_rounds = 4;
  c.dispute_window = window;
  c.dispute_arity = 2;
  if (with_referee) c.referee = ident("referee");
  return c;
}

// A sealed run of `n` steps whose step `t` (>= 2) is disputed: S_{t-1} is
// the synthetic pre-state, the miner's S_t the post-state digest of its
// trace, the challenger's that of its own. Party A is the miner.
struct OperatorRun {
  OperatorRun(uint64_t n, uint64_t t, std::vector<OpNode> miner_trace, std::vector<OpNode> challenger_trace,
              LedgerConfig cfg = config())
      : ledger(cfg), step(t), miner_nodes(std::move(miner_trace)), challenger_nodes(std::move(challenger_trace)) {
    task = test::test_task("task", n);
    const commit::TrainingCommitment c = test::commitment_for(task, miner);
    for (const Bytes &who : {ident("owner"), miner, challenger}) ledger.deposit(who, test::kFunds, now);
    ledger.post_task(ident("owner"), task.encode(), now);
    ledger.register_verifier(challenger, 10, now);
    run_id = ledger.start_training_commitment(miner, c.encode(), now);
    for (uint64_t s = 1; s <= n; ++s) {
      const commit::StepLeaf leaf{run_id, s, miner_digest(s), 1.0, 1.0};
      tree->append(leaf.encode());
      leaves.push_back(leaf.encode());
    }
    ledger.post_checkpoint_root(miner, run_id, n, tree->root(n), {}, ++now);
  }

  Digest other(uint64_t s, const char *who) const { return test::label_digest(fmt::format("{}{}", who, s)); }
  Digest miner_digest(uint64_t s) const {
    return s + 1 == step ? hash::state_digest(pre_tensors()) : s == step ? post_digest(miner_nodes) : s < step ? other(s, "") : other(s, "m");
  }
  Digest challenger_digest(uint64_t s) const {
    return s + 1 == step ? hash::state_digest(pre_tensors())
           : s == step   ? post_digest(challenger_nodes)
           : s < step    ? other(s, "")
                         : other(s, "c");
  }
  Bytes proof(uint64_t s) const { return merkle::encode_proof(tree->inclusion_proof(s - 1, leaves.size())); }

  // Plays the step bisection from (0, n] to the step found.
  DisputeProgress find_step() {
    const uint64_t n = leaves.size();
    DisputeProgress p =
        ledger.open_dispute(challenger, run_id, {}, {}, leaves.at(n - 1), proof(n), challenger_digest(n), ++now);
    while (!p.ended && ledger.dispute_info(0).phase == DisputePhase::kSteps) {
      std::vector<LeafClaim> m;
      std::vector<Digest> c;
      for (uint64_t s : ledger.dispute_info(0).points) {
        m.push_back({leaves.at(s - 1), proof(s)});
        c.push_back(challenger_digest(s));
      }
      ledger.claim_dispute(miner, 0, {}, m, ++now);
      p = ledger.claim_dispute(challenger, 0, c, {}, now);
    }
    return p;
  }

  const std::vector<OpNode> &nodes(bool of_miner) const { return of_miner ? miner_nodes : challenger_nodes; }
  const Bytes &who(bool of_miner) const { return of_miner ? miner : challenger; }

  DisputeProgress commit(bool of_miner) {
    const OpTrace t(nodes(of_miner));
    return ledger.commit_trace(who(of_miner), 0, t.size(), t.root(t.size()), t.node(t.size() - 1),
                               merkle::encode_proof(t.inclusion_proof(t.size() - 1, t.size())), ++now);
  }

  // The operator bisection's rounds, each party claiming its prefix roots.
  void bisect_operators() {
    const OpTrace m(miner_nodes), c(challenger_nodes);
    auto root = [](const OpTrace &t, uint64_t p) { return t.root(std::min(p, t.size())); };
    while (ledger.dispute_info(0).phase == DisputePhase::kOperators) {
      std::vector<Digest> cm, cc;
      for (uint64_t p : ledger.dispute_info(0).points) {
        cm.push_back(root(m, p));
        cc.push_back(root(c, p));
      }
      ledger.claim_dispute(miner, 0, cm, {}, ++now);
      ledger.claim_dispute(challenger, 0, cc, {}, now);
    }
  }

  // The step phase, both traces and the operator bisection: the dispute
  // is in its openings phase.
  void reach_openings() {
    find_step();
    commit(true);
    commit(false);
    bisect_operators();
  }

  // The party's opening of the node found, as an honest party makes it.
  Bytes opening(bool of_miner) const {
    const uint64_t i = *ledger.dispute_info(0).node;
    const auto &t = nodes(of_miner);
    return i < t.size() ? open(t, i, input_content(t, i)).encode() : NodeOpening{}.encode();
  }

  // The referee's ruling on the two openings of the dispute `i` describes
  // (in its openings or referee phase), with the backend.
  static Ruling referee_ruling(const game::DisputeInfo &i, const Bytes &miner_opening,
                               const Bytes &challenger_opening, Backend &backend) {
    const OperatorDispute d{*i.node, i.op_agreed, i.miner_op_hi, i.challenger_op_hi, i.agreed};
    return decide_operator(d, NodeOpening::decode(miner_opening), NodeOpening::decode(challenger_opening), backend);
  }

  // The whole operator phase, honest openings; the referee rules when
  // asked. The ended dispute's progress.
  DisputeProgress play(Backend &backend, std::optional<Bytes> miner_opening = std::nullopt) {
    EXPECT_FALSE(find_step().ended);
    commit(true);
    commit(false);
    bisect_operators();
    const Bytes mo = miner_opening ? *miner_opening : opening(true);
    const Bytes co = opening(false);
    const game::DisputeInfo info = ledger.dispute_info(0);
    ledger.open_node(miner, 0, mo, ++now);
    DisputeProgress p = ledger.open_node(challenger, 0, co, now);
    if (p.ended) {
      // The ledger's ruling is the referee's.
      const Ruling r = referee_ruling(info, mo, co, backend);
      EXPECT_EQ(p.ended->losers, (r.a_loses ? game::kLoserMiner : 0) | (r.b_loses ? game::kLoserChallenger : 0))
          << r.reason;
      EXPECT_EQ(game::dispute_rule_name(p.ended->rule), r.rule) << r.reason;
      return p;
    }
    EXPECT_EQ(ledger.dispute_info(0).phase, DisputePhase::kReferee);
    const Ruling r = referee_ruling(info, mo, co, backend);
    return ledger.rule_dispute(ident("referee"), 0, r.a_loses, r.b_loses, game::dispute_rule_from_name(r.rule),
                               ++now);
  }

  Ledger ledger;
  uint64_t step;
  std::vector<OpNode> miner_nodes, challenger_nodes;
  uint64_t now = 100;
  task::Task task;
  Bytes miner = ident("miner");
  Bytes challenger = ident("verifier");
  Digest run_id;
  std::unique_ptr<merkle::StoredTree> tree = merkle::StoredTree::in_memory();
  std::vector<Bytes> leaves;
};

void expect_round_trip(const Ledger &l) {
  const Bytes s = l.save();
  EXPECT_EQ(Ledger::load(s).save(), s);
}

// The forged traces: what a forger claims instead of the truth, each
// consistent with itself from the forged node on (its post-state node is
// the true digest of what it says it computed).
struct Forgery {
  const char *what;
  std::function<std::vector<OpNode>()> trace;
  uint64_t node;            // where the bisection must end
  DisputeEnd end;           // who decides
  const char *rule;
};

std::vector<Forgery> forgeries() {
  return {
      {"a forged operator result",
       [] {
         auto g = honest_nodes();
         g[1].outputs[0] = tensor("forged");
         g[2] = f_node(tensor("forged", from_node(1)), 4, "forged");
         g.push_back(post_node("forged*4", 2));
         return g;
       },
       1, DisputeEnd::kRefereeRuled, "operator"},
      {"a forged post-state digest",
       [] {
         auto g = true_trace();
         g[3] = post_node("w0*2*3*4", 2, label("not the state"));
         return g;
       },
       3, DisputeEnd::kRuled, "post_state"},
      {"an input its source does not hold",
       [] {
         auto g = honest_nodes();
         g[2] = f_node(tensor("other", from_node(1)), 4, "other");
         g.push_back(post_node("other*4", 2));
         return g;
       },
       2, DisputeEnd::kRuled, "source"},
      {"a pre-state tensor that is not S_(t-1)'s",
       [] {
         auto g = honest_nodes();
         g[0] = f_node(tensor("w1", from_state("param/w")), 2, "w1");
         g[1] = f_node(tensor("w1*2", from_node(0)), 3, "w1*2");
         g[2] = f_node(tensor("w1*2*3", from_node(1)), 4, "w1*2*3");
         g.push_back(post_node("w1*2*3*4", 2));
         return g;
       },
       0, DisputeEnd::kRuled, "source"},
      {"another operator argument",
       [] {
         auto g = honest_nodes();
         g[1] = f_node(tensor("w0*2", from_node(0)), 7, "w0*2");
         g[2] = f_node(tensor("w0*2*7", from_node(1)), 4, "w0*2*7");
         g.push_back(post_node("w0*2*7*4", 2));
         return g;
       },
       1, DisputeEnd::kRefereeRuled, "step"},
      {"a trace with an extra operator",
       [] {
         auto g = honest_nodes();
         g.push_back(f_node(tensor("w0*2*3*4", from_node(2)), 5, "w0*2*3*4"));
         g.push_back(post_node("w0*2*3*4*5", 3));
         return g;
       },
       3, DisputeEnd::kRefereeRuled, "step"},
  };
}

TEST(LedgerOperators, EveryForgeryLosesAtItsRuleWhicheverSideForges) {
  for (const Forgery &f : forgeries()) {
    for (const bool miner_forges : {true, false}) {
      SCOPED_TRACE(fmt::format("{}, the {} forges", f.what, miner_forges ? "miner" : "challenger"));
      OperatorRun r(12, 7, miner_forges ? f.trace() : true_trace(), miner_forges ? true_trace() : f.trace());
      Backend backend;
      const DisputeProgress p = r.play(backend);
      ASSERT_TRUE(p.ended);
      EXPECT_EQ(p.ended->end, f.end);
      EXPECT_EQ(game::dispute_rule_name(p.ended->rule), std::string(f.rule));
      EXPECT_EQ(p.ended->losers, miner_forges ? game::kLoserMiner : game::kLoserChallenger);
      EXPECT_EQ(p.ended->step, 7u);
      EXPECT_EQ(p.ended->node, f.node);
      EXPECT_EQ(p.ended->phase, f.end == DisputeEnd::kRuled ? DisputePhase::kOpenings : DisputePhase::kReferee);
      // The referee ran one operator for an operator ruling, and nothing
      // for what the ledger decided.
      if (std::string(f.rule) == "operator") {
        EXPECT_EQ(backend.executed, 1);
        EXPECT_EQ(backend.replayed, 0);
      }
      EXPECT_EQ(game::DisputeRecord::decode(p.ended->encode()), *p.ended);
      EXPECT_EQ(r.ledger.apply({{"call", "ledger_info"}})["open_disputes"], 0);
    }
  }
}

TEST(LedgerOperators, AnOpeningThatDoesNotProveLosesOnTheLedger) {
  auto forged = forgeries()[0].trace();
  OperatorRun r(10, 4, forged, true_trace());
  Backend backend;
  // The forger opens the true node 1 under its own root.
  const DisputeProgress p = r.play(backend, open(true_trace(), 1, "w0*2").encode());
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->end, DisputeEnd::kRuled);
  EXPECT_EQ(p.ended->rule, DisputeRule::kOpening);
  EXPECT_EQ(p.ended->losers, game::kLoserMiner);
}

TEST(LedgerOperators, ATraceMustEndInThePartysDigestOfTheStep) {
  // A forger that committed a forged S_t cannot bring the true trace: its
  // post-state node gives the true digest, not the one it committed.
  OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
  ASSERT_FALSE(r.find_step().ended);
  EXPECT_EQ(r.ledger.dispute_info(0).phase, DisputePhase::kTraces);
  const OpTrace truth(true_trace());
  const Bytes proof = merkle::encode_proof(truth.inclusion_proof(3, 4));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.commit_trace(r.miner, 0, 4, truth.root(4), truth.node(3), proof, r.now + 1));
  // Nor a trace whose last node is not the post-state node.
  const Bytes not_last = merkle::encode_proof(truth.inclusion_proof(2, 3));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.commit_trace(r.challenger, 0, 3, truth.root(3), truth.node(2), not_last, r.now + 1));
  // Nor a post-state node that is not the trace's last.
  EXPECT_REFUSED(r.ledger, Status::kProofLength,
                 r.ledger.commit_trace(r.challenger, 0, 5, truth.root(4), truth.node(3), proof, r.now + 1));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.commit_trace(r.challenger, 0, 0, truth.root(4), truth.node(3), proof, r.now + 1));
  EXPECT_REFUSED(r.ledger, Status::kMalformed,
                 r.ledger.commit_trace(r.challenger, 0, 4, truth.root(4), Bytes{1, 2, 3}, proof, r.now + 1));
  EXPECT_REFUSED(r.ledger, Status::kPermission,
                 r.ledger.commit_trace(ident("stranger"), 0, 4, truth.root(4), truth.node(3), proof, r.now + 1));
  r.commit(false);
  expect_round_trip(r.ledger);
  EXPECT_REFUSED(r.ledger, Status::kDuplicate, r.commit(false));
  // Calls of another phase are refused in this one.
  EXPECT_REFUSED(r.ledger, Status::kState, r.ledger.open_node(r.miner, 0, r.opening(true), r.now + 1));
  EXPECT_REFUSED(r.ledger, Status::kState, r.ledger.claim_dispute(r.miner, 0, {Digest{}}, {}, r.now + 1));
  EXPECT_REFUSED(r.ledger, Status::kState,
                 r.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kStep, r.now + 1));
}

TEST(LedgerOperators, APartyThatStopsAnsweringLosesInEveryPhase) {
  for (const bool miner_silent : {true, false}) {
    const uint8_t silent = miner_silent ? game::kLoserMiner : game::kLoserChallenger;
    {  // traces
      OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
      r.find_step();
      r.commit(!miner_silent);
      const uint64_t deadline = r.ledger.dispute_info(0).deadline;
      EXPECT_REFUSED(r.ledger, Status::kState, r.ledger.settle_dispute(0, deadline));
      r.now = deadline;
      EXPECT_REFUSED(r.ledger, Status::kState, r.commit(miner_silent));  // at deadline + 1
      const DisputeProgress p = r.ledger.settle_dispute(0, deadline + 1);
      ASSERT_TRUE(p.ended);
      EXPECT_EQ(p.ended->losers, silent);
      EXPECT_EQ(p.ended->phase, DisputePhase::kTraces);
    }
    {  // operators
      OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
      r.find_step();
      r.commit(true);
      r.commit(false);
      ASSERT_EQ(r.ledger.dispute_info(0).phase, DisputePhase::kOperators);
      const auto &t = r.nodes(!miner_silent);
      const OpTrace tr(t);
      std::vector<Digest> c;
      for (uint64_t p : r.ledger.dispute_info(0).points) c.push_back(tr.root(std::min(p, tr.size())));
      r.ledger.claim_dispute(r.who(!miner_silent), 0, c, {}, ++r.now);
      expect_round_trip(r.ledger);
      const DisputeProgress p = r.ledger.settle_dispute(0, r.ledger.dispute_info(0).deadline + 1);
      ASSERT_TRUE(p.ended);
      EXPECT_EQ(p.ended->losers, silent);
      EXPECT_EQ(p.ended->phase, DisputePhase::kOperators);
    }
    {  // openings
      OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
      r.reach_openings();
      ASSERT_EQ(r.ledger.dispute_info(0).phase, DisputePhase::kOpenings);
      r.ledger.open_node(r.who(!miner_silent), 0, r.opening(!miner_silent), ++r.now);
      expect_round_trip(r.ledger);
      const DisputeProgress p = r.ledger.settle_dispute(0, r.ledger.dispute_info(0).deadline + 1);
      ASSERT_TRUE(p.ended);
      EXPECT_EQ(p.ended->losers, silent);
      EXPECT_EQ(p.ended->end, miner_silent ? DisputeEnd::kMinerDefault : DisputeEnd::kChallengerDefault);
      EXPECT_EQ(p.ended->phase, DisputePhase::kOpenings);
      EXPECT_EQ(p.ended->node, 1u);
    }
  }
  // A referee that does not rule names no loser.
  OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
  r.reach_openings();
  r.ledger.open_node(r.miner, 0, r.opening(true), ++r.now);
  r.ledger.open_node(r.challenger, 0, r.opening(false), r.now);
  ASSERT_EQ(r.ledger.dispute_info(0).phase, DisputePhase::kReferee);
  expect_round_trip(r.ledger);
  const DisputeProgress p = r.ledger.settle_dispute(0, r.ledger.dispute_info(0).deadline + 1);
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->end, DisputeEnd::kRefereeDefault);
  EXPECT_EQ(p.ended->losers, 0);
}

TEST(LedgerOperators, TheRefereeRulesOnlyWhereAndHowTheLedgerAllows) {
  // A forged operator result: same operator and arguments, so the referee
  // may rule by operator or step, never by source (no batch source), and
  // must name a loser; nobody else may rule.
  OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
  r.reach_openings();
  r.ledger.open_node(r.miner, 0, r.opening(true), ++r.now);
  EXPECT_REFUSED(r.ledger, Status::kState,
                 r.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kOperator, r.now));
  r.ledger.open_node(r.challenger, 0, r.opening(false), r.now);
  const uint64_t now = r.now + 1;
  EXPECT_REFUSED(r.ledger, Status::kPermission,
                 r.ledger.rule_dispute(r.challenger, 0, true, false, DisputeRule::kOperator, now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.rule_dispute(ident("referee"), 0, false, false, DisputeRule::kOperator, now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kSource, now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kPostState, now));
  EXPECT_REFUSED(r.ledger, Status::kInvalidArgument,
                 r.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kOpening, now));
  EXPECT_REFUSED(r.ledger, Status::kState, r.ledger.open_node(r.miner, 0, r.opening(true), now));
  const DisputeProgress p = r.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kOperator, now);
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->losers, game::kLoserMiner);
  // Where the operators differ, an operator ruling is refused: the step decides.
  OperatorRun s(10, 4, forgeries()[4].trace(), true_trace());
  s.reach_openings();
  s.ledger.open_node(s.miner, 0, s.opening(true), ++s.now);
  s.ledger.open_node(s.challenger, 0, s.opening(false), s.now);
  EXPECT_REFUSED(s.ledger, Status::kInvalidArgument,
                 s.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kOperator, s.now + 1));
}

TEST(LedgerOperators, WithoutAnOpeningThatDecodesNothingIsAccepted) {
  OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
  r.reach_openings();
  Bytes bad = r.opening(true);
  bad.resize(bad.size() - 1);
  EXPECT_REFUSED(r.ledger, Status::kMalformed, r.ledger.open_node(r.miner, 0, bad, r.now + 1));
  EXPECT_REFUSED(r.ledger, Status::kPermission, r.ledger.open_node(ident("x"), 0, r.opening(true), r.now + 1));
}

TEST(LedgerOperators, WithoutARefereeTheDisputeEndsAtTheStep) {
  OperatorRun r(10, 4, forgeries()[0].trace(), true_trace(), config(false));
  const DisputeProgress p = r.find_step();
  ASSERT_TRUE(p.ended);
  EXPECT_EQ(p.ended->end, DisputeEnd::kStepFound);
  EXPECT_EQ(p.ended->step, 4u);
  EXPECT_EQ(p.ended->phase, DisputePhase::kSteps);
}

TEST(LedgerOperators, RandomForgedNodesEitherSideTheForgerAlwaysLoses) {
  std::mt19937_64 rng(20261203);
  for (int trial = 0; trial < 24; ++trial) {
    // Forge the result of node k (0..2) or the post-state digest (3); the
    // forger carries the forgery through the rest of its trace.
    const uint64_t k = rng() % 4;
    const bool miner_forges = rng() % 2;
    const uint64_t n = 3 + rng() % 30;
    const uint64_t t = 2 + rng() % (n - 1);
    auto g = honest_nodes();
    std::string content = input_content(g, k);
    if (k < 3) {
      content = fmt::format("forged{}", trial);
      g[k].outputs[0] = tensor(content);
      for (uint64_t j = k + 1; j < 3; ++j) {
        g[j] = f_node(tensor(content, from_node(j - 1)), static_cast<int64_t>(j + 2), content);
        content = fmt::format("{}*{}", content, j + 2);
      }
      g.push_back(post_node(content, 2));
    } else {
      g.push_back(post_node("w0*2*3*4", 2, label(fmt::format("forged{}", trial))));
    }
    SCOPED_TRACE(fmt::format("trial {}: node {} of step {} of {}, {} forges", trial, k, t, n,
                             miner_forges ? "the miner" : "the challenger"));
    OperatorRun r(n, t, miner_forges ? g : true_trace(), miner_forges ? true_trace() : g);
    Backend backend;
    const DisputeProgress p = r.play(backend);
    ASSERT_TRUE(p.ended);
    EXPECT_EQ(p.ended->node, k);
    EXPECT_EQ(p.ended->losers, miner_forges ? game::kLoserMiner : game::kLoserChallenger);
  }
}

TEST(LedgerOperators, JsonCallsMatchTheCppCalls) {
  auto forged = forgeries()[0].trace();
  OperatorRun a(10, 4, forged, true_trace()), b(10, 4, forged, true_trace());
  a.find_step();
  b.find_step();
  for (const bool m : {true, false}) {
    const OpTrace t(a.nodes(m));
    a.commit(m);
    b.now++;
    b.ledger.apply({{"call", "commit_trace"},
                    {"caller", to_hex(b.who(m))},
                    {"now", b.now},
                    {"dispute_id", 0},
                    {"size", t.size()},
                    {"root", t.root(t.size()).hex()},
                    {"post_node", to_hex(t.node(t.size() - 1))},
                    {"post_proof", to_hex(merkle::encode_proof(t.inclusion_proof(t.size() - 1, t.size())))}});
  }
  EXPECT_EQ(a.ledger.save(), b.ledger.save());
  a.bisect_operators();
  b.bisect_operators();
  a.ledger.open_node(a.miner, 0, a.opening(true), ++a.now);
  const nlohmann::json opened = b.ledger.apply(
      {{"call", "open_node"}, {"caller", to_hex(b.miner)}, {"now", ++b.now}, {"dispute_id", 0}, {"opening", to_hex(b.opening(true))}});
  EXPECT_EQ(opened["check"]["failure_rule"], nullptr);
  EXPECT_EQ(opened["phase"], "openings");
  EXPECT_EQ(a.ledger.save(), b.ledger.save());
  a.ledger.open_node(a.challenger, 0, a.opening(false), a.now);
  b.ledger.apply({{"call", "open_node"}, {"caller", to_hex(b.challenger)}, {"now", b.now}, {"dispute_id", 0}, {"opening", to_hex(b.opening(false))}});
  EXPECT_EQ(a.ledger.save(), b.ledger.save());
  EXPECT_EQ(b.ledger.apply({{"call", "dispute_info"}, {"dispute_id", 0}})["phase"], "referee");
  a.ledger.rule_dispute(ident("referee"), 0, true, false, DisputeRule::kOperator, ++a.now);
  const nlohmann::json ruled = b.ledger.apply({{"call", "rule_dispute"},
                                               {"caller", to_hex(ident("referee"))},
                                               {"now", ++b.now},
                                               {"dispute_id", 0},
                                               {"miner_loses", true},
                                               {"challenger_loses", false},
                                               {"rule", "operator"}});
  EXPECT_EQ(a.ledger.save(), b.ledger.save());
  EXPECT_EQ(ruled["outcome"]["end"], "referee_ruled");
  EXPECT_EQ(ruled["outcome"]["losers"], nlohmann::json({"miner"}));
  EXPECT_EQ(ruled["outcome"]["rule"], "operator");
}

TEST(LedgerOperators, LoadRefusesImpossibleOperatorPhases) {
  OperatorRun r(10, 4, forgeries()[0].trace(), true_trace());
  r.find_step();
  r.commit(true);
  r.commit(false);
  const Bytes good = r.ledger.save();
  auto refused = [&](const std::function<void(v2::LedgerState &)> &f) {
    v2::LedgerState p;
    EXPECT_TRUE(p.ParseFromArray(good.data(), static_cast<int>(good.size())));
    f(p);
    std::string s;
    p.SerializeToString(&s);
    return status_of([&] { Ledger::load(Bytes(s.begin(), s.end())); });
  };
  EXPECT_EQ(refused([](v2::LedgerState &) {}), Status::kOk);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->set_phase(6); }), Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->set_phase(2); }), Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->clear_operators(); }), Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->set_miner_trace_size(0); }), Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->mutable_operators()->set_hi(9); }),
            Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_config()->clear_referee(); }), Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->mutable_miner_opening()->set_failure_rule(1); }),
            Status::kMalformed);
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.mutable_disputes(0)->mutable_operators()->set_agreed(std::string(32, 'x')); }),
            Status::kMalformed);  // at 0 nodes the agreed root is the empty trace's
  EXPECT_EQ(refused([](v2::LedgerState &p) { p.set_format_version(3); }), Status::kMalformed);
}

}  // namespace pot::ledger_operator_test
