// The operator phase of a ledger dispute (docs/ledger.md 2.15-2.17): once
// the step bisection has found step t (S_{t-1} agreed, S_t disputed), each
// party commits its operator trace of step t (docs/PROTOCOL.md 22.2) bound
// to its digest of S_t by the trace's post-state node; the traces are
// bisected to the first differing node (claim_dispute, over node counts);
// each party opens that node (22.3) and the ledger applies what needs no
// data set and no LibTorch: rule 1 (the opening proves against the party's
// claim), rule 2 for node, state and unwritten sources, and the post-state
// node's digest. What it cannot decide (rule 3's operator run, rule 4's
// step replay, a batch source) goes to the configured referee, whose
// ruling the ledger restricts to those rules. Every phase has a deadline;
// a party that misses it loses (settle_dispute, ledger_disputes.cpp).
#include <fmt/format.h>

#include "codec/json_fields.h"
#include "common/error.h"
#include "dispute/op_node.h"
#include "dispute/op_referee.h"
#include "game/ledger.h"
#include "game/ledger_util.h"
#include "hash/rfc6962.h"
#include "merkle/proof.h"

namespace pot::game {

using dispute::Party;
using hash::Digest;
using namespace ledger_util;

namespace {

const char *role_of(Party p) { return p == Party::kA ? "miner" : "challenger"; }

// The caller's side of dispute `id`: kPermission for a stranger.
Party party_of(ByteView caller, const Bytes &miner, const Bytes &challenger, uint64_t id, const char *call) {
  if (same(caller, miner)) return Party::kA;
  if (same(caller, challenger)) return Party::kB;
  fail(Status::kPermission, "{}: {} is not a party of dispute {}", call, to_hex(caller), id);
}

}  // namespace

void Ledger::check_phase(const Dispute &d, uint64_t dispute_id, DisputePhase phase, uint64_t now, const char *call,
                         bool miner) const {
  if (d.phase != phase)
    fail(Status::kState, "{}: dispute {} is in its {} phase, not its {} phase", call, dispute_id,
         dispute_phase_name(d.phase), dispute_phase_name(phase));
  const uint64_t deadline = miner ? with_grace(dispute_deadline(d)) : dispute_deadline(d);
  if (now > deadline)
    fail(Status::kState, "{}: the {} phase of dispute {} closed at height {}; settle_dispute ends it", call,
         dispute_phase_name(phase), dispute_id, deadline);
}

DisputeProgress Ledger::commit_trace(ByteView caller, uint64_t dispute_id, uint64_t size, const Digest &root,
                                     ByteView post_node, ByteView post_proof, uint64_t now) {
  constexpr const char *kCall = "commit_trace";
  check_now(now);
  check_caller(caller, kCall);
  Dispute &d = dispute_for(dispute_id, kCall);
  const Party p = party_of(caller, d.miner, d.challenger, dispute_id, kCall);
  check_phase(d, dispute_id, DisputePhase::kTraces, now, kCall, p == Party::kA);
  TraceCommitment &mine = p == Party::kA ? d.miner_trace : d.challenger_trace;
  if (mine.size != 0)
    fail(Status::kDuplicate, "{}: the {} has committed its trace of dispute {}", kCall, role_of(p), dispute_id);
  if (size == 0) fail(Status::kInvalidArgument, "{}: a trace of 0 nodes (the post-state node is always last)", kCall);
  // The post-state node binds the trace to the party's digest of S_t.
  const dispute::StepBisection &steps = d.bisection.bisection();
  const Digest &claimed = p == Party::kA ? steps.a_hi() : steps.b_hi();
  const dispute::OpNode node = dispute::decode_op_node(post_node);
  if (node.name != dispute::kPostStateOp || !node.overload.empty())
    fail(Status::kInvalidArgument, "{}: the trace's last node is {}, not the post-state node", kCall,
         dispute::describe(node));
  if (node.outputs.size() != 1 || node.outputs[0].kind != dispute::ValueKind::kDigest)
    fail(Status::kInvalidArgument, "{}: the post-state node's result is not one digest", kCall);
  if (node.outputs[0].digest != claimed)
    fail(Status::kInvalidArgument, "{}: the post-state node gives {}, the {}'s digest of S_{} is {}", kCall,
         node.outputs[0].digest.hex(), role_of(p), steps.hi(), claimed.hex());
  merkle::verify_inclusion(size - 1, size, hash::leaf_hash(post_node).view(), merkle::decode_proof(post_proof),
                           root.view());
  const TraceCommitment &theirs = p == Party::kA ? d.challenger_trace : d.miner_trace;
  if (theirs.size == 0) {
    mine = {size, root};
    height_ = now;
    return {.dispute_id = dispute_id};
  }
  // Both traces: the operator bisection over node counts (0, N], agreed on
  // the empty trace; a party's claim past its trace's end is its full root.
  const TraceCommitment &a = p == Party::kA ? TraceCommitment{size, root} : theirs;
  const TraceCommitment &b = p == Party::kA ? theirs : TraceCommitment{size, root};
  dispute::TimedBisection ops(0, std::max(a.size, b.size), config_.dispute_arity, hash::empty_root(), a.root, b.root,
                              config_.dispute_window, now, config_.miner_grace);
  mine = {size, root};
  d.operators = std::move(ops);
  d.phase = d.operators->bisection().done() ? DisputePhase::kOpenings : DisputePhase::kOperators;
  d.phase_start = now;
  height_ = now;
  return {.dispute_id = dispute_id};
}

DisputeProgress Ledger::open_node(ByteView caller, uint64_t dispute_id, ByteView opening, uint64_t now,
                                  dispute::OpeningCheck *check) {
  constexpr const char *kCall = "open_node";
  check_now(now);
  check_caller(caller, kCall);
  Dispute &d = dispute_for(dispute_id, kCall);
  const Party p = party_of(caller, d.miner, d.challenger, dispute_id, kCall);
  check_phase(d, dispute_id, DisputePhase::kOpenings, now, kCall, p == Party::kA);
  std::optional<OpeningOnLedger> &mine = p == Party::kA ? d.miner_opening : d.challenger_opening;
  if (mine) fail(Status::kDuplicate, "{}: the {} has opened its node of dispute {}", kCall, role_of(p), dispute_id);
  if (opening.size() > kMaxLedgerOpeningBytes)
    fail(Status::kLimit, "{}: an opening of {} bytes (at most {})", kCall, opening.size(), kMaxLedgerOpeningBytes);
  const dispute::NodeOpening o = dispute::NodeOpening::decode(opening);
  const dispute::StepBisection &ops = d.operators->bisection();
  const dispute::OperatorDispute od{ops.hi() - 1, ops.agreed(), ops.a_hi(), ops.b_hi(), d.bisection.bisection().agreed()};
  OpeningOnLedger on{hash::sha256(opening), dispute::check_opening_alone(od, o, p == Party::kA)};
  if (check) *check = on.check;
  on.check.reason.clear();  // the call's result gives it; the state keeps what rulings need
  const std::optional<OpeningOnLedger> &theirs = p == Party::kA ? d.challenger_opening : d.miner_opening;
  if (!theirs) {
    mine = std::move(on);
    height_ = now;
    return {.dispute_id = dispute_id};
  }
  const OpeningOnLedger &a = p == Party::kA ? on : *theirs;
  const OpeningOnLedger &b = p == Party::kA ? *theirs : on;
  const std::optional<dispute::Ruling> ruling = dispute::decide_without_backend(a.check, b.check);
  if (!ruling) {
    phase_deadline(now, kCall);  // the referee's, checked before anything changes
    mine = std::move(on);
    d.phase = DisputePhase::kReferee;
    d.phase_start = now;
    height_ = now;
    return {.dispute_id = dispute_id};
  }
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  mine = std::move(on);
  const uint8_t losers = (ruling->a_loses ? kLoserMiner : 0) | (ruling->b_loses ? kLoserChallenger : 0);
  const DisputeProgress out = log_end(
      dispute_id, record_of(dispute_id, d, DisputeEnd::kRuled, losers, dispute_rule_from_name(ruling->rule)));
  disputes_.erase(dispute_id);
  height_ = now;
  return out;
}

DisputeProgress Ledger::rule_dispute(ByteView caller, uint64_t dispute_id, bool miner_loses, bool challenger_loses,
                                     DisputeRule rule, uint64_t now) {
  constexpr const char *kCall = "rule_dispute";
  check_now(now);
  check_caller(caller, kCall);
  const Dispute &d = dispute_for(dispute_id, kCall);
  if (config_.referee.empty() || !same(caller, config_.referee))
    fail(Status::kPermission, "{}: {} is not the ledger's referee", kCall, to_hex(caller));
  check_phase(d, dispute_id, DisputePhase::kReferee, now, kCall);
  if (!miner_loses && !challenger_loses)
    fail(Status::kInvalidArgument, "{}: a ruling names a loser: the parties' nodes differ, so one is not the true one",
         kCall);
  // The referee rules only where the ledger could not, and by a rule that
  // applies to these openings.
  const dispute::OpeningCheck &a = d.miner_opening->check, &b = d.challenger_opening->check;
  switch (rule) {
    case DisputeRule::kSource:
      if ((miner_loses && !a.batch_deferred) || (challenger_loses && !b.batch_deferred))
        fail(Status::kInvalidArgument, "{}: a source ruling names a party whose opening has no batch source to check",
             kCall);
      break;
    case DisputeRule::kOperator:
      if (!a.has_node || !b.has_node || a.node_key != b.node_key)
        fail(Status::kInvalidArgument,
             "{}: an operator ruling needs the same operator and arguments in both openings (else the step decides)",
             kCall);
      break;
    case DisputeRule::kStep:
      break;
    default:
      fail(Status::kInvalidArgument, "{}: the referee rules by source, operator or step, not {}", kCall,
           dispute_rule_name(rule));
  }
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  const uint8_t losers = (miner_loses ? kLoserMiner : 0) | (challenger_loses ? kLoserChallenger : 0);
  const DisputeProgress out =
      log_end(dispute_id, record_of(dispute_id, d, DisputeEnd::kRefereeRuled, losers, rule));
  disputes_.erase(dispute_id);
  height_ = now;
  return out;
}

}  // namespace pot::game
