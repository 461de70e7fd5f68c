// The ledger's dispute calls (docs/ledger.md 2.12-2.14): the step
// bisection of docs/PROTOCOL.md 22.1 between a run's miner and a registered
// verifier, with a deadline per round (dispute::TimedBisection), the
// dispute's phases, deadlines, records and state. The miner's claims are
// its committed step leaves, each proven against the run's final root, so
// the miner cannot claim in a dispute anything but what it committed while
// training; the verifier's are digests. When one step is left, the dispute
// ends (no referee configured) or goes on to the operator phase
// (ledger_operators.cpp); a party that misses a deadline loses. An ended
// dispute leaves its record in the outcome log (docs/PROTOCOL.md 20.2).
#include <fmt/format.h>

#include "codec/json_fields.h"
#include "commit/step_leaf.h"
#include "common/error.h"
#include "game/ledger.h"
#include "game/ledger_util.h"
#include "hash/rfc6962.h"
#include "merkle/proof.h"
#include "pot/v2/ledger.pb.h"

namespace pot::game {

using dispute::Party;
using hash::Digest;
using namespace ledger_util;

namespace {

// The state digest a committed step leaf of run `run_id` gives, checked
// against the run's final root of `size` leaves: (step, digest).
std::pair<uint64_t, Digest> proven_leaf(const Digest &run_id, uint64_t size, const Digest &root, ByteView leaf,
                                        ByteView proof, const std::string &what) {
  const commit::StepLeaf l = commit::StepLeaf::decode(leaf);
  if (l.run_id != run_id)
    fail(Status::kInvalidArgument, "{} is a step of run {}, not of run {}", what, l.run_id.hex(), run_id.hex());
  if (l.step > size) fail(Status::kInvalidArgument, "{} names step {}, the run has {}", what, l.step, size);
  merkle::verify_inclusion(l.step - 1, size, hash::leaf_hash(leaf).view(), merkle::decode_proof(proof), root.view());
  return {l.step, l.state_digest};
}

const char *role_name(Party p) { return p == Party::kA ? "miner" : "challenger"; }

}  // namespace

Ledger::Dispute &Ledger::dispute_for(uint64_t id, const char *call) {
  return const_cast<Dispute &>(std::as_const(*this).dispute_for(id, call));
}

const Ledger::Dispute &Ledger::dispute_for(uint64_t id, const char *call) const {
  const auto it = disputes_.find(id);
  if (it != disputes_.end()) return it->second;
  if (id < next_dispute_id_)
    fail(Status::kNotFound, "{}: dispute {} has ended; its record is in the outcome log", call, id);
  fail(Status::kNotFound, "{}: no dispute {}", call, id);
}

DisputeRecord Ledger::record_of(uint64_t id, const Dispute &d, DisputeEnd end, uint8_t losers, DisputeRule rule) {
  const dispute::StepBisection &b = d.bisection.bisection();
  DisputeRecord rec;
  rec.dispute_id = id;
  rec.run_id = d.run_id;
  rec.miner = d.miner;
  rec.challenger = d.challenger;
  rec.lo = d.opened_lo;
  rec.hi = d.opened_hi;
  rec.end = end;
  rec.phase = d.phase;
  rec.losers = losers;
  rec.rule = rule;
  rec.rounds = d.rounds_before + b.rounds_played();
  if (b.done()) {
    rec.step = b.hi();
    rec.agreed = b.agreed();
    rec.miner_digest = b.a_hi();
    rec.challenger_digest = b.b_hi();
  }
  rec.miner_trace = d.miner_trace;
  rec.challenger_trace = d.challenger_trace;
  if (d.operators) {
    const dispute::StepBisection &o = d.operators->bisection();
    rec.op_rounds = d.op_rounds_before + o.rounds_played();
    if (o.done()) rec.node = o.hi() - 1;
  }
  return rec;
}

DisputeProgress Ledger::log_end(uint64_t id, const DisputeRecord &rec) {
  DisputeProgress out{.dispute_id = id, .ended = rec, .outcome_index = outcomes_.size()};
  // The bonds' recipients get entries first (an entry with nothing in it
  // is invisible); the append is the last step that may allocate.
  book_.reserve(rec.miner);
  book_.reserve(rec.challenger);
  outcomes_.append_hash(hash::leaf_hash(rec.encode()));
  // The run, open or closed (a dispute keeps its task from being pruned):
  // its bond moves by the record's losers while the miner holds it, then a
  // miner that lost is slashable (the witness game's accountability).
  // Nothing here allocates or throws.
  Run *open = nullptr;
  bool *slashable = nullptr;
  if (auto r = runs_.find(rec.run_id); r != runs_.end()) {
    open = &r->second;
    slashable = &open->slashable;
  } else if (auto c = closed_.find(rec.run_id); c != closed_.end()) {
    slashable = &c->second.slashable;
  }
  settle_bonds(rec, slashable && holds_bond(*slashable));
  if ((rec.losers & kLoserMiner) && slashable) {
    *slashable = true;
    if (open) open->lost_dispute = true;
  }
  return out;
}

uint64_t Ledger::phase_deadline(uint64_t now, const char *call) const {
  if (config_.dispute_window > UINT64_MAX - now)
    fail(Status::kOutOfRange, "{}: a dispute phase from height {} of {} blocks ends past 2^64 - 1", call, now,
         config_.dispute_window);
  return now + config_.dispute_window;
}

uint64_t Ledger::dispute_deadline(const Dispute &d) const {
  switch (d.phase) {
    case DisputePhase::kSteps: return d.bisection.deadline();
    case DisputePhase::kOperators: return d.operators->deadline();
    default: return d.phase_start + config_.dispute_window;  // checked when the phase started
  }
}

DisputeProgress Ledger::after_steps(uint64_t id, Dispute &&d, uint64_t now) {
  if (config_.referee.empty()) {
    const DisputeProgress out = log_end(id, record_of(id, d, DisputeEnd::kStepFound, 0, DisputeRule::kNone));
    disputes_.erase(id);
    return out;
  }
  d.phase = DisputePhase::kTraces;
  d.phase_start = now;
  disputes_.insert_or_assign(id, std::move(d));
  return {.dispute_id = id};
}

DisputeProgress Ledger::open_dispute(ByteView caller, const Digest &run_id, ByteView lo_leaf, ByteView lo_proof,
                                     ByteView hi_leaf, ByteView hi_proof, const Digest &claim, uint64_t now) {
  constexpr const char *kCall = "open_dispute";
  check_now(now);
  check_caller(caller, kCall);
  // An open run, or a closed one (its challenges final: a split's members
  // dispute after the finalization), while its task is not pruned.
  struct Disputed {
    const Bytes &miner;
    uint64_t n;
    const Digest &root;
    const Digest &initial;
  };
  const auto closed = closed_.find(run_id);
  const Run *open = closed == closed_.end() ? &run_for(run_id, kCall) : nullptr;
  const Disputed r = open ? Disputed{open->commitment.miner_identity, open->commitment.declared_steps,
                                     open->latest_root, open->commitment.initial_state_digest}
                          : Disputed{closed->second.miner_identity, closed->second.declared_steps,
                                     closed->second.root, closed->second.initial_state_digest};
  if (same(caller, r.miner)) fail(Status::kPermission, "{}: the miner cannot dispute its own run", kCall);
  Bytes challenger = to_bytes(caller);
  if (!verifiers_.contains(challenger))
    fail(Status::kPermission, "{}: {} is not a registered verifier", kCall, to_hex(challenger));
  if (open && !open->sealed())
    fail(Status::kState, "{}: run {} is not sealed ({} of {} steps posted)", kCall, run_id.hex(), open->latest_size,
         open->commitment.declared_steps);
  // Disputes open for a bounded time after the task's end, so that a chain
  // of disputes cannot keep the task's bonds locked (prune_task waits for
  // open disputes) for ever.
  const uint64_t end = tasks_.at(open ? open->commitment.task_id : closed->second.task_id).task.end_height;
  const uint64_t horizon = saturating_add(end, config_.max_task_blocks);
  if (now > horizon)
    fail(Status::kState, "{}: the task of run {} ended at height {}; its runs are disputed until height {}", kCall,
         run_id.hex(), end, horizon);
  for (const auto &[id, d] : disputes_)
    if (d.run_id == run_id && d.challenger == challenger)
      fail(Status::kDuplicate, "{}: {} already disputes run {} (dispute {})", kCall, to_hex(challenger),
           run_id.hex(), id);
  const uint64_t n = r.n;
  uint64_t lo = 0;
  Digest agreed = r.initial;
  if (!lo_leaf.empty() || !lo_proof.empty()) {
    if (lo_leaf.empty()) fail(Status::kInvalidArgument, "{}: a lo_proof without a lo_leaf", kCall);
    std::tie(lo, agreed) = proven_leaf(run_id, n, r.root, lo_leaf, lo_proof, fmt::format("{}: lo_leaf", kCall));
  }
  const auto [hi, miner_hi] = proven_leaf(run_id, n, r.root, hi_leaf, hi_proof, fmt::format("{}: hi_leaf", kCall));
  if (lo >= hi) fail(Status::kInvalidArgument, "{}: the agreed step {} is not below the disputed step {}", kCall, lo, hi);
  if (claim == miner_hi)
    fail(Status::kInvalidArgument, "{}: the claim is the miner's committed digest of step {}: nothing is disputed",
         kCall, hi);
  if (next_dispute_id_ == UINT64_MAX) fail(Status::kLimit, "{}: every dispute id is used", kCall);
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  book_.check_free(caller, config_.dispute_bond, kCall, "the dispute bond");
  const uint64_t id = next_dispute_id_;
  Dispute d{.run_id = run_id,
            .miner = r.miner,
            .challenger = std::move(challenger),
            .declared_steps = n,
            .root = r.root,
            .opened_lo = lo,
            .opened_hi = hi,
            .opened_height = now,
            .bisection = dispute::TimedBisection(lo, hi, config_.dispute_arity, agreed, miner_hi, claim,
                                                 config_.dispute_window, now, config_.miner_grace)};
  if (d.bisection.bisection().done()) phase_deadline(now, kCall);  // the traces phase's, checked first
  DisputeProgress out{.dispute_id = id};
  // The bond is locked before a dispute of one step ends at once (and
  // settles it); a failure to store the dispute gives it back.
  book_.lock(caller, config_.dispute_bond);
  try {
    if (d.bisection.bisection().done()) {
      out = after_steps(id, std::move(d), now);  // one step from the start: nothing to bisect
    } else {
      disputes_.emplace(id, std::move(d));
    }
  } catch (...) {
    book_.release(caller, config_.dispute_bond);
    throw;
  }
  ++next_dispute_id_;
  height_ = now;
  return out;
}

DisputeProgress Ledger::claim_dispute(ByteView caller, uint64_t dispute_id, const std::vector<Digest> &digests,
                                      const std::vector<LeafClaim> &leaves, uint64_t now) {
  constexpr const char *kCall = "claim_dispute";
  check_now(now);
  check_caller(caller, kCall);
  Dispute &d = dispute_for(dispute_id, kCall);
  if (!same(caller, d.miner) && !same(caller, d.challenger))
    fail(Status::kPermission, "{}: {} is not a party of dispute {}", kCall, to_hex(caller), dispute_id);
  const Party p = same(caller, d.miner) ? Party::kA : Party::kB;
  if (d.phase != DisputePhase::kSteps && d.phase != DisputePhase::kOperators)
    fail(Status::kState, "{}: dispute {} is in its {} phase, not bisecting", kCall, dispute_id,
         dispute_phase_name(d.phase));
  const bool steps = d.phase == DisputePhase::kSteps;
  const dispute::TimedBisection &timed = steps ? d.bisection : *d.operators;
  const dispute::StepBisection &b = timed.bisection();
  const char *what = steps ? "steps" : "node counts";
  if (now > timed.deadline(p))
    fail(Status::kState,
         "{}: the round of dispute {} over the {} ({}, {}] closed at height {} for the {}; settle_dispute ends it",
         kCall, dispute_id, what, b.lo(), b.hi(), timed.deadline(p), role_name(p));
  if (timed.claimed(p))
    fail(Status::kDuplicate, "{}: the {} has claimed in this round of dispute {}", kCall, role_name(p), dispute_id);
  const std::vector<uint64_t> points = b.points();
  // Step leaves are the miner's claims over steps; every other claim is a digest.
  const bool by_leaves = steps && p == Party::kA;
  const size_t given = by_leaves ? leaves.size() : digests.size();
  if (by_leaves ? !digests.empty() : !leaves.empty())
    fail(Status::kInvalidArgument, "{}: the {} claims with {}", kCall, role_name(p),
         by_leaves ? "its committed step leaves, not digests"
                   : steps ? "digests, not step leaves" : "trace roots (digests), not step leaves");
  if (given != points.size())
    fail(Status::kInvalidArgument, "{}: {} claims for the {} points of the round over the {} ({}, {}]", kCall, given,
         points.size(), what, b.lo(), b.hi());
  std::vector<Digest> claims = digests;
  if (by_leaves) {
    for (size_t j = 0; j < points.size(); ++j) {
      const auto [step, digest] = proven_leaf(d.run_id, d.declared_steps, d.root, leaves[j].step_leaf,
                                              leaves[j].leaf_proof, fmt::format("{}: leaf {}", kCall, j));
      if (step != points[j])
        fail(Status::kInvalidArgument, "{}: leaf {} is step {}, the round's point {} is step {}", kCall, j, step, j,
             points[j]);
      claims.push_back(digest);
    }
  }
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  // Played on a copy, so nothing changes until every step has succeeded.
  dispute::TimedBisection next = timed;
  next.claim(p, claims, now);
  DisputeProgress out{.dispute_id = dispute_id};
  if (steps) {
    if (next.bisection().done()) {
      Dispute moved{d};
      moved.bisection = std::move(next);
      out = after_steps(dispute_id, std::move(moved), now);
    } else {
      d.bisection = std::move(next);
    }
  } else {
    if (next.bisection().done()) {
      d.phase = DisputePhase::kOpenings;  // next's deadline, now + window, fit
      d.phase_start = now;
    }
    d.operators = std::move(next);
  }
  height_ = now;
  return out;
}

DisputeProgress Ledger::settle_dispute(uint64_t dispute_id, uint64_t now) {
  constexpr const char *kCall = "settle_dispute";
  check_now(now);
  const Dispute &d = dispute_for(dispute_id, kCall);
  // A party loses once its deadline has passed without its call; the
  // miner's comes miner_grace blocks after the challenger's.
  const uint64_t deadline = dispute_deadline(d);
  const bool miner_late = now > with_grace(deadline), challenger_late = now > deadline;
  uint8_t losers = 0;
  switch (d.phase) {
    case DisputePhase::kSteps:
    case DisputePhase::kOperators:
      for (const Party p : (d.phase == DisputePhase::kSteps ? d.bisection : *d.operators).default_losers(now))
        losers |= p == Party::kA ? kLoserMiner : kLoserChallenger;
      break;
    case DisputePhase::kTraces:
      losers = (d.miner_trace.size == 0 && miner_late ? kLoserMiner : 0) |
               (d.challenger_trace.size == 0 && challenger_late ? kLoserChallenger : 0);
      break;
    case DisputePhase::kOpenings:
      losers = (!d.miner_opening && miner_late ? kLoserMiner : 0) |
               (!d.challenger_opening && challenger_late ? kLoserChallenger : 0);
      break;
    case DisputePhase::kReferee:
      break;
  }
  if (d.phase == DisputePhase::kReferee ? !challenger_late : losers == 0)
    fail(Status::kState, "{}: the {} {} of dispute {} is open until height {} (for the miner until {})", kCall,
         dispute_phase_name(d.phase),
         d.phase == DisputePhase::kSteps || d.phase == DisputePhase::kOperators ? "round" : "phase", dispute_id,
         deadline, with_grace(deadline));
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  const DisputeEnd end = d.phase == DisputePhase::kReferee ? DisputeEnd::kRefereeDefault
                         : losers == kLoserMiner           ? DisputeEnd::kMinerDefault
                         : losers == kLoserChallenger      ? DisputeEnd::kChallengerDefault
                                                           : DisputeEnd::kBothDefault;
  const DisputeProgress out = log_end(dispute_id, record_of(dispute_id, d, end, losers, DisputeRule::kNone));
  disputes_.erase(dispute_id);
  height_ = now;
  return out;
}

DisputeInfo Ledger::dispute_info(uint64_t dispute_id) const {
  const Dispute &d = dispute_for(dispute_id, "dispute_info");
  const dispute::StepBisection &b = d.bisection.bisection();
  DisputeInfo i;
  i.id = dispute_id;
  i.run_id = d.run_id;
  i.miner = d.miner;
  i.challenger = d.challenger;
  i.opened_lo = d.opened_lo;
  i.opened_hi = d.opened_hi;
  i.opened_height = d.opened_height;
  i.phase = d.phase;
  i.lo = b.lo();
  i.hi = b.hi();
  i.agreed = b.agreed();
  i.miner_hi = b.a_hi();
  i.challenger_hi = b.b_hi();
  i.rounds = d.rounds_before + b.rounds_played();
  i.deadline = dispute_deadline(d);
  i.miner_deadline = with_grace(i.deadline);
  i.miner_trace = d.miner_trace;
  i.challenger_trace = d.challenger_trace;
  if (d.operators) {
    const dispute::StepBisection &o = d.operators->bisection();
    i.op_lo = o.lo();
    i.op_hi = o.hi();
    i.op_agreed = o.agreed();
    i.miner_op_hi = o.a_hi();
    i.challenger_op_hi = o.b_hi();
    i.op_rounds = d.op_rounds_before + o.rounds_played();
    if (d.phase >= DisputePhase::kOpenings) i.node = o.hi() - 1;
  }
  i.miner_opening = d.miner_opening;
  i.challenger_opening = d.challenger_opening;
  switch (d.phase) {
    case DisputePhase::kSteps:
    case DisputePhase::kOperators: {
      const dispute::TimedBisection &t = d.phase == DisputePhase::kSteps ? d.bisection : *d.operators;
      i.points = t.bisection().points();
      i.miner_claimed = t.claimed(Party::kA);
      i.challenger_claimed = t.claimed(Party::kB);
      break;
    }
    case DisputePhase::kTraces:
      i.miner_claimed = d.miner_trace.size != 0;
      i.challenger_claimed = d.challenger_trace.size != 0;
      break;
    case DisputePhase::kOpenings:
    case DisputePhase::kReferee:
      i.miner_claimed = d.miner_opening.has_value();
      i.challenger_claimed = d.challenger_opening.has_value();
      break;
  }
  return i;
}

}  // namespace pot::game
