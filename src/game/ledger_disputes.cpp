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
  DisputeProgress out{id, rec, outcomes_.size()};
  outcomes_.append_hash(hash::leaf_hash(rec.encode()));
  // The witness game's accountability: a miner that lost a dispute of its
  // run is slashable, open run or closed (gone with its pruned task: the
  // record still names it). Nothing here allocates or throws.
  if (rec.losers & kLoserMiner) {
    if (auto r = runs_.find(rec.run_id); r != runs_.end()) {
      r->second.lost_dispute = true;
      r->second.slashable = true;
    } else if (auto c = closed_.find(rec.run_id); c != closed_.end()) {
      c->second.slashable = true;
    }
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
  return {id, std::nullopt, 0};
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
  const uint64_t id = next_dispute_id_;
  Dispute d{run_id,
            r.miner,
            std::move(challenger),
            n,
            r.root,
            lo,
            hi,
            now,
            0,
            dispute::TimedBisection(lo, hi, config_.dispute_arity, agreed, miner_hi, claim, config_.dispute_window,
                                    now),
            DisputePhase::kSteps,
            0,
            {},
            {},
            std::nullopt,
            0,
            std::nullopt,
            std::nullopt};
  if (d.bisection.bisection().done()) phase_deadline(now, kCall);  // the traces phase's, checked first
  DisputeProgress out{id, std::nullopt, 0};
  if (d.bisection.bisection().done()) {
    out = after_steps(id, std::move(d), now);  // one step from the start: nothing to bisect
  } else {
    disputes_.emplace(id, std::move(d));
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
  if (now > timed.deadline())
    fail(Status::kState, "{}: the round of dispute {} over the {} ({}, {}] closed at height {}; settle_dispute ends it",
         kCall, dispute_id, what, b.lo(), b.hi(), timed.deadline());
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
  DisputeProgress out{dispute_id, std::nullopt, 0};
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
  const uint64_t deadline = dispute_deadline(d);
  if (now <= deadline)
    fail(Status::kState, "{}: the {} {} of dispute {} is open until height {}", kCall, dispute_phase_name(d.phase),
         d.phase == DisputePhase::kSteps || d.phase == DisputePhase::kOperators ? "round" : "phase", dispute_id,
         deadline);
  uint8_t losers = 0;
  switch (d.phase) {
    case DisputePhase::kSteps:
    case DisputePhase::kOperators:
      for (const Party p : (d.phase == DisputePhase::kSteps ? d.bisection : *d.operators).default_losers(now))
        losers |= p == Party::kA ? kLoserMiner : kLoserChallenger;
      break;
    case DisputePhase::kTraces:
      losers = (d.miner_trace.size == 0 ? kLoserMiner : 0) | (d.challenger_trace.size == 0 ? kLoserChallenger : 0);
      break;
    case DisputePhase::kOpenings:
      losers = (!d.miner_opening ? kLoserMiner : 0) | (!d.challenger_opening ? kLoserChallenger : 0);
      break;
    case DisputePhase::kReferee:
      break;
  }
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

// ---- state ----

namespace {

// A TimedBisection into LedgerDispute's fields 10-19 or a LedgerBisection.
template <typename M>
void save_bisection(const dispute::TimedBisection &t, uint32_t rounds, M *m) {
  const dispute::StepBisection &b = t.bisection();
  m->set_lo(b.lo());
  m->set_hi(b.hi());
  m->set_agreed(as_string(b.agreed().view()));
  m->set_miner_hi(as_string(b.a_hi().view()));
  m->set_challenger_hi(as_string(b.b_hi().view()));
  m->set_rounds(rounds);
  m->set_round_start(t.round_start());
  for (const Party party : {Party::kA, Party::kB}) {
    if (const auto &pending = t.pending(party)) {
      m->set_pending_party(static_cast<uint32_t>(party));
      for (const Digest &x : *pending) m->add_pending(as_string(x.view()));
      m->set_pending_height(t.height());
    }
  }
}

// The inverse of save_bisection over the interval (first_lo, first_hi]
// the bisection started with; `done` says whether it must be done. Heights
// lie in from..to.
template <typename M>
dispute::TimedBisection load_bisection(const M &m, const std::string &where, uint64_t first_lo, uint64_t first_hi,
                                       bool done, uint32_t arity, uint64_t window, uint64_t from, uint64_t to) {
  if (m.lo() < first_lo || m.hi() > first_hi || m.lo() >= m.hi() || (m.hi() == m.lo() + 1) != done)
    bad_state(fmt::format("{}: a current interval ({}, {}] that is not {} part of ({}, {}]", where, m.lo(), m.hi(),
                          done ? "a one-step" : "an open", first_lo, first_hi));
  if (m.rounds() > dispute::bisection_rounds(first_lo, first_hi, arity))
    bad_state(fmt::format("{}: {} rounds played, more than the bisection takes", where, m.rounds()));
  if (from > m.round_start() || m.round_start() > to)
    bad_state(fmt::format("{}: a round started at height {}, outside {}..{}", where, m.round_start(), from, to));
  const Digest agreed = digest_field(m.agreed(), where + " agreed");
  const Digest miner_hi = digest_field(m.miner_hi(), where + " miner_hi");
  const Digest challenger_hi = digest_field(m.challenger_hi(), where + " challenger_hi");
  dispute::TimedBisection b = as_state_check(where, [&] {
    return dispute::TimedBisection(m.lo(), m.hi(), arity, agreed, miner_hi, challenger_hi, window, m.round_start());
  });
  if (m.pending_party() > 2) bad_state(fmt::format("{}: pending_party {}", where, m.pending_party()));
  if (m.pending_party() != 0) {
    if (m.pending_height() > to)
      bad_state(fmt::format("{}: a claim at height {}, above the ledger's", where, m.pending_height()));
    std::vector<Digest> pending;
    for (const std::string &x : m.pending()) pending.push_back(digest_field(x, where + " pending"));
    as_state_check(where + ": the pending claim",
                   [&] { b.claim(static_cast<Party>(m.pending_party()), pending, m.pending_height()); });
  } else if (m.pending_size() != 0 || m.pending_height() != 0) {
    bad_state(where + ": pending claims without a party");
  }
  return b;
}

void save_opening(const OpeningOnLedger &o, v2::LedgerNodeOpening *m) {
  m->set_digest(as_string(o.digest.view()));
  m->set_failure_rule(static_cast<uint32_t>(o.check.failure_rule.empty()
                                                ? DisputeRule::kNone
                                                : dispute_rule_from_name(o.check.failure_rule)));
  m->set_has_node(o.check.has_node);
  m->set_batch_deferred(o.check.batch_deferred);
  m->set_node_key(as_string(o.check.node_key.view()));
  m->set_post_state(o.check.post_state);
  m->set_post_state_holds(o.check.post_state_holds);
}

OpeningOnLedger load_opening(const v2::LedgerNodeOpening &m, const std::string &where) {
  OpeningOnLedger o;
  o.digest = digest_field(m.digest(), where + " digest");
  if (m.failure_rule() > static_cast<uint32_t>(DisputeRule::kSource))
    bad_state(fmt::format("{}: failure_rule {} (0, 1 opening or 2 source)", where, m.failure_rule()));
  if (m.failure_rule() != 0) o.check.failure_rule = dispute_rule_name(static_cast<DisputeRule>(m.failure_rule()));
  o.check.has_node = m.has_node();
  o.check.batch_deferred = m.batch_deferred();
  o.check.node_key = digest_field(m.node_key(), where + " node_key");
  o.check.post_state = m.post_state();
  o.check.post_state_holds = m.post_state_holds();
  const bool checked_node = m.failure_rule() == 0 && m.has_node();
  if (!checked_node && (o.check.batch_deferred || o.check.node_key != Digest{} || o.check.post_state))
    bad_state(where + ": a node's check without a checked node");
  if (o.check.post_state_holds && !o.check.post_state) bad_state(where + ": post_state_holds without post_state");
  return o;
}

}  // namespace

void Ledger::save_disputes(v2::LedgerState &p) const {
  for (const auto &[id, d] : disputes_) {
    v2::LedgerDispute *m = p.add_disputes();
    m->set_id(id);
    m->set_run_id(as_string(d.run_id.view()));
    m->set_miner(as_string(d.miner));
    m->set_challenger(as_string(d.challenger));
    m->set_declared_steps(d.declared_steps);
    m->set_root(as_string(d.root.view()));
    m->set_opened_lo(d.opened_lo);
    m->set_opened_hi(d.opened_hi);
    m->set_opened_height(d.opened_height);
    save_bisection(d.bisection, d.rounds_before + d.bisection.bisection().rounds_played(), m);
    m->set_phase(static_cast<uint32_t>(d.phase));
    m->set_phase_start(d.phase_start);
    if (d.miner_trace.size != 0) {
      m->set_miner_trace_size(d.miner_trace.size);
      m->set_miner_trace_root(as_string(d.miner_trace.root.view()));
    }
    if (d.challenger_trace.size != 0) {
      m->set_challenger_trace_size(d.challenger_trace.size);
      m->set_challenger_trace_root(as_string(d.challenger_trace.root.view()));
    }
    if (d.operators)
      save_bisection(*d.operators, d.op_rounds_before + d.operators->bisection().rounds_played(),
                     m->mutable_operators());
    if (d.miner_opening) save_opening(*d.miner_opening, m->mutable_miner_opening());
    if (d.challenger_opening) save_opening(*d.challenger_opening, m->mutable_challenger_opening());
  }
  p.set_next_dispute_id(next_dispute_id_);
}

void Ledger::load_disputes(const v2::LedgerState &p) {
  next_dispute_id_ = p.next_dispute_id();
  for (const v2::LedgerDispute &m : p.disputes()) {
    const std::string where = fmt::format("dispute {}", m.id());
    if (m.id() >= next_dispute_id_) bad_state(where + ": its id was never given");
    Bytes miner = to_bytes(view_of(m.miner()));
    Bytes challenger = to_bytes(view_of(m.challenger()));
    as_state_check(where + ": miner", [&] { check_caller(miner, "open_dispute"); });
    as_state_check(where + ": challenger", [&] { check_caller(challenger, "open_dispute"); });
    if (miner == challenger) bad_state(where + ": the miner is its own challenger");
    if (!verifiers_.contains(challenger)) bad_state(where + ": the challenger is not a registered verifier");
    if (m.declared_steps() == 0 || m.opened_lo() >= m.opened_hi() || m.opened_hi() > m.declared_steps())
      bad_state(fmt::format("{}: an interval ({}, {}] outside a run of {} steps", where, m.opened_lo(), m.opened_hi(),
                            m.declared_steps()));
    if (m.phase() < 1 || m.phase() > 5) bad_state(fmt::format("{}: phase {} is not 1..5", where, m.phase()));
    const auto phase = static_cast<DisputePhase>(m.phase());
    if (phase != DisputePhase::kSteps && config_.referee.empty())
      bad_state(fmt::format("{}: in the {} phase with no referee configured", where, dispute_phase_name(phase)));
    const Digest run_id = digest_field(m.run_id(), where + " run_id");
    const Digest root = digest_field(m.root(), where + " root");
    dispute::TimedBisection b =
        load_bisection(m, where, m.opened_lo(), m.opened_hi(), phase != DisputePhase::kSteps, config_.dispute_arity,
                       config_.dispute_window, m.opened_height(), height_);
    if (phase == DisputePhase::kSteps ? m.phase_start() != 0
                                      : m.phase_start() < b.round_start() || m.phase_start() > height_)
      bad_state(fmt::format("{}: phase_start {} in the {} phase", where, m.phase_start(), dispute_phase_name(phase)));
    // The traces: none before their phase, each one's or none in it, both after it.
    auto trace = [&](uint64_t size, const std::string &root_bytes, const char *who) {
      TraceCommitment t;
      if (size == 0) {
        if (!root_bytes.empty()) bad_state(fmt::format("{}: a {} trace root without a size", where, who));
      } else {
        t = {size, digest_field(root_bytes, fmt::format("{} {} trace root", where, who))};
      }
      const bool committed = size != 0;
      if (phase < DisputePhase::kTraces && committed)
        bad_state(fmt::format("{}: a {} trace before the traces phase", where, who));
      if (phase > DisputePhase::kTraces && !committed)
        bad_state(fmt::format("{}: no {} trace past the traces phase", where, who));
      return t;
    };
    const TraceCommitment miner_trace = trace(m.miner_trace_size(), m.miner_trace_root(), "miner");
    const TraceCommitment challenger_trace = trace(m.challenger_trace_size(), m.challenger_trace_root(), "challenger");
    if (phase == DisputePhase::kTraces && miner_trace.size != 0 && challenger_trace.size != 0)
      bad_state(where + ": both traces committed in the traces phase");
    std::optional<dispute::TimedBisection> operators;
    if (m.has_operators() != (phase >= DisputePhase::kOperators))
      bad_state(fmt::format("{}: an operator bisection {} the {} phase", where, m.has_operators() ? "in" : "missing in",
                            dispute_phase_name(phase)));
    if (m.has_operators()) {
      if (m.operators().lo() == 0 && m.operators().agreed() != as_string(hash::empty_root().view()))
        bad_state(where + ": the operator bisection does not start from the empty trace");
      operators = load_bisection(m.operators(), where + " operators", 0,
                                 std::max(miner_trace.size, challenger_trace.size), phase != DisputePhase::kOperators,
                                 config_.dispute_arity, config_.dispute_window, m.opened_height(), height_);
    }
    std::optional<OpeningOnLedger> miner_opening, challenger_opening;
    if (m.has_miner_opening()) miner_opening = load_opening(m.miner_opening(), where + " miner_opening");
    if (m.has_challenger_opening())
      challenger_opening = load_opening(m.challenger_opening(), where + " challenger_opening");
    const bool any = miner_opening || challenger_opening, both = miner_opening && challenger_opening;
    if ((phase < DisputePhase::kOpenings && any) || (phase == DisputePhase::kOpenings && both) ||
        (phase == DisputePhase::kReferee && !both))
      bad_state(fmt::format("{}: openings that do not fit the {} phase", where, dispute_phase_name(phase)));
    if (both && dispute::decide_without_backend(miner_opening->check, challenger_opening->check))
      bad_state(where + ": with the referee, but the ledger rules on these openings");
    for (const auto &[id, other] : disputes_)
      if (other.run_id == run_id && other.challenger == challenger)
        bad_state(fmt::format("{}: its challenger already disputes the run (dispute {})", where, id));
    Dispute d{run_id,
              std::move(miner),
              std::move(challenger),
              m.declared_steps(),
              root,
              m.opened_lo(),
              m.opened_hi(),
              m.opened_height(),
              m.rounds(),
              std::move(b),
              phase,
              m.phase_start(),
              miner_trace,
              challenger_trace,
              std::move(operators),
              m.has_operators() ? m.operators().rounds() : 0,
              std::move(miner_opening),
              std::move(challenger_opening)};
    if (!disputes_.emplace(m.id(), std::move(d)).second) bad_state(where + " is listed twice");
  }
}

// ---- JSON ----

nlohmann::json Ledger::progress_json(const DisputeProgress &p, const merkle::Log &log) {
  nlohmann::json out = {{"dispute_id", p.dispute_id}, {"ended", p.ended.has_value()}};
  if (p.ended) {
    out["record"] = to_hex(p.ended->encode());
    out["outcome"] = p.ended->to_json();
    out["outcome_index"] = p.outcome_index;
    out["outcome_root"] = log.root().hex();
  }
  return out;
}

std::optional<nlohmann::json> Ledger::apply_dispute(const std::string &name, const nlohmann::json &call) {
  const codec::JsonFields f(call, name);
  if (name == "open_dispute") {
    f.only({"call", "caller", "now", "run_id", "lo_leaf", "lo_proof", "hi_leaf", "hi_proof", "claim"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const Digest run_id = f.digest("run_id");
    const Bytes lo_leaf = f.hex("lo_leaf");
    const Bytes lo_proof = f.hex("lo_proof");
    const Bytes hi_leaf = f.hex("hi_leaf");
    const Bytes hi_proof = f.hex("hi_proof");
    const Digest claim = f.digest("claim");
    nlohmann::json out = progress_json(open_dispute(caller, run_id, lo_leaf, lo_proof, hi_leaf, hi_proof, claim, now),
                                       outcomes_);
    if (!out["ended"]) out.update(dispute_json(dispute_info(out["dispute_id"])));
    return out;
  }
  if (name == "claim_dispute") {
    f.only({"call", "caller", "now", "dispute_id", "claims"});
    const Bytes caller = f.hex("caller");
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("dispute_id");
    const nlohmann::json &list = f.value("claims");
    if (!list.is_array()) fail(Status::kInvalidArgument, "{}: must be an array", f.path("claims"));
    if (list.size() >= dispute::kMaxArity)
      fail(Status::kInvalidArgument, "{}: {} claims, a round has at most {}", f.path("claims"), list.size(),
           dispute::kMaxArity - 1);
    std::vector<Digest> digests;
    std::vector<LeafClaim> leaves;
    for (size_t j = 0; j < list.size(); ++j) {
      const std::string where = fmt::format("{}[{}]", f.path("claims"), j);
      if (list[j].is_object()) {
        const codec::JsonFields e(list[j], where);
        e.only({"step_leaf", "leaf_proof"});
        leaves.push_back({e.hex("step_leaf"), e.hex("leaf_proof")});
      } else {
        const nlohmann::json wrapped = {{"claim", list[j]}};
        digests.push_back(codec::JsonFields(wrapped, where).digest("claim"));
      }
    }
    if (!digests.empty() && !leaves.empty())
      fail(Status::kInvalidArgument, "{}: digests and step leaves mixed", f.path("claims"));
    nlohmann::json out = progress_json(claim_dispute(caller, id, digests, leaves, now), outcomes_);
    if (!out["ended"]) out.update(dispute_json(dispute_info(id)));
    return out;
  }
  if (name == "settle_dispute") {
    f.only({"call", "now", "dispute_id"});
    const uint64_t now = f.u64("now");
    const uint64_t id = f.u64("dispute_id");
    return progress_json(settle_dispute(id, now), outcomes_);
  }
  if (name == "dispute_info") {
    f.only({"call", "dispute_id"});
    nlohmann::json out = dispute_json(dispute_info(f.u64("dispute_id")));
    return out;
  }
  return apply_operator_phase(name, call);
}

nlohmann::json Ledger::dispute_json(const DisputeInfo &i) {
  auto trace = [](const TraceCommitment &t) {
    return t.size == 0 ? nlohmann::json(nullptr) : nlohmann::json{{"size", t.size}, {"root", t.root.hex()}};
  };
  auto opening = [](const std::optional<OpeningOnLedger> &o) {
    if (!o) return nlohmann::json(nullptr);
    return nlohmann::json{{"digest", o->digest.hex()},
                          {"failure_rule", o->check.failure_rule.empty() ? nlohmann::json(nullptr)
                                                                         : nlohmann::json(o->check.failure_rule)},
                          {"has_node", o->check.has_node},
                          {"batch_deferred", o->check.batch_deferred},
                          {"post_state", o->check.post_state},
                          {"post_state_holds", o->check.post_state_holds}};
  };
  nlohmann::json out = {{"dispute_id", i.id},
                        {"run_id", i.run_id.hex()},
                        {"miner", to_hex(i.miner)},
                        {"challenger", to_hex(i.challenger)},
                        {"opened_lo", i.opened_lo},
                        {"opened_hi", i.opened_hi},
                        {"opened_height", i.opened_height},
                        {"phase", dispute_phase_name(i.phase)},
                        {"lo", i.lo},
                        {"hi", i.hi},
                        {"agreed", i.agreed.hex()},
                        {"miner_hi", i.miner_hi.hex()},
                        {"challenger_hi", i.challenger_hi.hex()},
                        {"rounds", i.rounds},
                        {"points", i.points},
                        {"deadline", i.deadline},
                        {"miner_claimed", i.miner_claimed},
                        {"challenger_claimed", i.challenger_claimed},
                        {"miner_trace", trace(i.miner_trace)},
                        {"challenger_trace", trace(i.challenger_trace)},
                        {"operators", nullptr},
                        {"node", nullptr},
                        {"miner_opening", opening(i.miner_opening)},
                        {"challenger_opening", opening(i.challenger_opening)}};
  if (i.phase >= DisputePhase::kOperators) {
    out["operators"] = {{"lo", i.op_lo},
                        {"hi", i.op_hi},
                        {"agreed", i.op_agreed.hex()},
                        {"miner_hi", i.miner_op_hi.hex()},
                        {"challenger_hi", i.challenger_op_hi.hex()},
                        {"rounds", i.op_rounds}};
  }
  if (i.node) out["node"] = *i.node;
  return out;
}

}  // namespace pot::game
