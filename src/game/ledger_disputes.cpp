// The ledger's dispute calls (docs/ledger.md 2.12-2.14): the step bisection
// of docs/PROTOCOL.md 22.1 between a run's miner and a registered verifier,
// with a deadline per round (dispute::TimedBisection). The miner's claims
// are its committed step leaves, each proven against the run's final root,
// so the miner cannot claim in a dispute anything but what it committed
// while training; the verifier's are digests. The dispute ends, and leaves
// its record in the outcome log (docs/PROTOCOL.md 20.2), when one step is
// left or when a party misses a round's deadline.
#include <fmt/format.h>

#include "commit/json_fields.h"
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

DisputeRecord Ledger::record_of(uint64_t id, const Dispute &d, const std::vector<Party> &losers) {
  const dispute::StepBisection &b = d.bisection.bisection();
  DisputeRecord rec;
  rec.dispute_id = id;
  rec.run_id = d.run_id;
  rec.miner = d.miner;
  rec.challenger = d.challenger;
  rec.lo = d.opened_lo;
  rec.hi = d.opened_hi;
  rec.rounds = d.rounds_before + b.rounds_played();
  if (b.done()) {
    rec.end = DisputeEnd::kStepFound;
    rec.step = b.hi();
    rec.agreed = b.agreed();
    rec.miner_digest = b.a_hi();
    rec.challenger_digest = b.b_hi();
  } else {
    rec.end = losers.size() == 2           ? DisputeEnd::kBothDefault
              : losers.at(0) == Party::kA ? DisputeEnd::kMinerDefault
                                          : DisputeEnd::kChallengerDefault;
  }
  return rec;
}

DisputeProgress Ledger::log_end(uint64_t id, const DisputeRecord &rec) {
  DisputeProgress out{id, rec, outcomes_.size()};
  outcomes_.append_hash(hash::leaf_hash(rec.encode()));
  return out;
}

DisputeProgress Ledger::open_dispute(ByteView caller, const Digest &run_id, ByteView lo_leaf, ByteView lo_proof,
                                     ByteView hi_leaf, ByteView hi_proof, const Digest &claim, uint64_t now) {
  constexpr const char *kCall = "open_dispute";
  check_now(now);
  check_caller(caller, kCall);
  if (closed_.contains(run_id))
    fail(Status::kState, "{}: run {} is closed: its root is no longer kept", kCall, run_id.hex());
  const Run &r = run_for(run_id, kCall);
  if (same(caller, r.commitment.miner_identity))
    fail(Status::kPermission, "{}: the miner cannot dispute its own run", kCall);
  Bytes challenger = to_bytes(caller);
  if (!verifiers_.contains(challenger))
    fail(Status::kPermission, "{}: {} is not a registered verifier", kCall, to_hex(challenger));
  if (!r.sealed())
    fail(Status::kState, "{}: run {} is not sealed ({} of {} steps posted)", kCall, run_id.hex(), r.latest_size,
         r.commitment.declared_steps);
  for (const auto &[id, d] : disputes_)
    if (d.run_id == run_id && d.challenger == challenger)
      fail(Status::kDuplicate, "{}: {} already disputes run {} (dispute {})", kCall, to_hex(challenger),
           run_id.hex(), id);
  const uint64_t n = r.commitment.declared_steps;
  uint64_t lo = 0;
  Digest agreed = r.commitment.initial_state_digest;
  if (!lo_leaf.empty() || !lo_proof.empty()) {
    if (lo_leaf.empty()) fail(Status::kInvalidArgument, "{}: a lo_proof without a lo_leaf", kCall);
    std::tie(lo, agreed) = proven_leaf(run_id, n, r.latest_root, lo_leaf, lo_proof, fmt::format("{}: lo_leaf", kCall));
  }
  const auto [hi, miner_hi] =
      proven_leaf(run_id, n, r.latest_root, hi_leaf, hi_proof, fmt::format("{}: hi_leaf", kCall));
  if (lo >= hi) fail(Status::kInvalidArgument, "{}: the agreed step {} is not below the disputed step {}", kCall, lo, hi);
  if (claim == miner_hi)
    fail(Status::kInvalidArgument, "{}: the claim is the miner's committed digest of step {}: nothing is disputed",
         kCall, hi);
  if (next_dispute_id_ == UINT64_MAX) fail(Status::kLimit, "{}: every dispute id is used", kCall);
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  const uint64_t id = next_dispute_id_;
  Dispute d{run_id,
            r.commitment.miner_identity,
            std::move(challenger),
            n,
            r.latest_root,
            lo,
            hi,
            now,
            0,
            dispute::TimedBisection(lo, hi, config_.dispute_arity, agreed, miner_hi, claim, config_.dispute_window,
                                    now)};
  DisputeProgress out{id, std::nullopt, 0};
  if (d.bisection.bisection().done()) {
    out = log_end(id, record_of(id, d, {}));  // one step from the start: nothing to bisect
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
  const dispute::StepBisection &b = d.bisection.bisection();
  if (now > d.bisection.deadline())
    fail(Status::kState, "{}: the round of dispute {} over ({}, {}] closed at height {}; settle_dispute ends it",
         kCall, dispute_id, b.lo(), b.hi(), d.bisection.deadline());
  if (d.bisection.claimed(p))
    fail(Status::kDuplicate, "{}: the {} has claimed in this round of dispute {}", kCall, role_name(p), dispute_id);
  const std::vector<uint64_t> points = b.points();
  const size_t given = p == Party::kA ? leaves.size() : digests.size();
  if ((p == Party::kA ? !digests.empty() : !leaves.empty()))
    fail(Status::kInvalidArgument, "{}: the {} claims with {}", kCall, role_name(p),
         p == Party::kA ? "its committed step leaves, not digests" : "digests, not step leaves");
  if (given != points.size())
    fail(Status::kInvalidArgument, "{}: {} claims for the {} points of the round over ({}, {}]", kCall, given,
         points.size(), b.lo(), b.hi());
  std::vector<Digest> claims = digests;
  if (p == Party::kA) {
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
  dispute::TimedBisection next = d.bisection;
  next.claim(p, claims, now);
  DisputeProgress out{dispute_id, std::nullopt, 0};
  if (next.bisection().done()) {
    Dispute ended{d};
    ended.bisection = next;
    out = log_end(dispute_id, record_of(dispute_id, ended, {}));
    disputes_.erase(dispute_id);
  } else {
    d.bisection = std::move(next);
  }
  height_ = now;
  return out;
}

DisputeProgress Ledger::settle_dispute(uint64_t dispute_id, uint64_t now) {
  constexpr const char *kCall = "settle_dispute";
  check_now(now);
  const Dispute &d = dispute_for(dispute_id, kCall);
  const std::vector<Party> losers = d.bisection.default_losers(now);
  if (losers.empty())
    fail(Status::kState, "{}: the round of dispute {} is open until height {}", kCall, dispute_id,
         d.bisection.deadline());
  if (outcomes_.size() == UINT64_MAX) fail(Status::kLimit, "{}: the outcome log is full", kCall);
  const DisputeProgress out = log_end(dispute_id, record_of(dispute_id, d, losers));
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
  i.lo = b.lo();
  i.hi = b.hi();
  i.agreed = b.agreed();
  i.miner_hi = b.a_hi();
  i.challenger_hi = b.b_hi();
  i.rounds = d.rounds_before + b.rounds_played();
  i.points = b.points();
  i.deadline = d.bisection.deadline();
  i.miner_claimed = d.bisection.claimed(Party::kA);
  i.challenger_claimed = d.bisection.claimed(Party::kB);
  return i;
}

// ---- state ----

void Ledger::save_disputes(v2::LedgerState &p) const {
  for (const auto &[id, d] : disputes_) {
    const dispute::StepBisection &b = d.bisection.bisection();
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
    m->set_lo(b.lo());
    m->set_hi(b.hi());
    m->set_agreed(as_string(b.agreed().view()));
    m->set_miner_hi(as_string(b.a_hi().view()));
    m->set_challenger_hi(as_string(b.b_hi().view()));
    m->set_rounds(d.rounds_before + b.rounds_played());
    m->set_round_start(d.bisection.round_start());
    for (const Party party : {Party::kA, Party::kB}) {
      if (const auto &pending = d.bisection.pending(party)) {
        m->set_pending_party(static_cast<uint32_t>(party));
        for (const Digest &x : *pending) m->add_pending(as_string(x.view()));
        m->set_pending_height(d.bisection.height());
      }
    }
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
    if (m.lo() < m.opened_lo() || m.hi() > m.opened_hi() || m.lo() >= m.hi() || m.hi() == m.lo() + 1)
      bad_state(fmt::format("{}: a current interval ({}, {}] that is not an open part of ({}, {}]", where, m.lo(),
                            m.hi(), m.opened_lo(), m.opened_hi()));
    if (m.rounds() > dispute::bisection_rounds(m.opened_lo(), m.opened_hi(), config_.dispute_arity))
      bad_state(fmt::format("{}: {} rounds played, more than the bisection takes", where, m.rounds()));
    if (m.opened_height() > m.round_start() || m.round_start() > height_)
      bad_state(fmt::format("{}: a round started at height {}, outside {}..{}", where, m.round_start(),
                            m.opened_height(), height_));
    const Digest run_id = digest_field(m.run_id(), where + " run_id");
    const Digest root = digest_field(m.root(), where + " root");
    const Digest agreed = digest_field(m.agreed(), where + " agreed");
    const Digest miner_hi = digest_field(m.miner_hi(), where + " miner_hi");
    const Digest challenger_hi = digest_field(m.challenger_hi(), where + " challenger_hi");
    dispute::TimedBisection b = as_state_check(where, [&] {
      return dispute::TimedBisection(m.lo(), m.hi(), config_.dispute_arity, agreed, miner_hi, challenger_hi,
                                     config_.dispute_window, m.round_start());
    });
    if (m.pending_party() > 2) bad_state(fmt::format("{}: pending_party {}", where, m.pending_party()));
    if (m.pending_party() != 0) {
      if (m.pending_height() > height_)
        bad_state(fmt::format("{}: a claim at height {}, above the ledger's", where, m.pending_height()));
      std::vector<Digest> pending;
      for (const std::string &x : m.pending()) pending.push_back(digest_field(x, where + " pending"));
      as_state_check(where + ": the pending claim",
                     [&] { b.claim(static_cast<Party>(m.pending_party()), pending, m.pending_height()); });
    } else if (m.pending_size() != 0 || m.pending_height() != 0) {
      bad_state(where + ": pending claims without a party");
    }
    for (const auto &[id, other] : disputes_)
      if (other.run_id == run_id && other.challenger == challenger)
        bad_state(fmt::format("{}: its challenger already disputes the run (dispute {})", where, id));
    Dispute d{run_id, std::move(miner), std::move(challenger), m.declared_steps(), root, m.opened_lo(), m.opened_hi(),
              m.opened_height(), m.rounds(), std::move(b)};
    if (!disputes_.emplace(m.id(), std::move(d)).second) bad_state(where + " is listed twice");
  }
}

// ---- JSON ----

namespace {

nlohmann::json progress_json(const DisputeProgress &p, const merkle::Log &log) {
  nlohmann::json out = {{"dispute_id", p.dispute_id}, {"ended", p.ended.has_value()}};
  if (p.ended) {
    out["record"] = to_hex(p.ended->encode());
    out["outcome"] = p.ended->to_json();
    out["outcome_index"] = p.outcome_index;
    out["outcome_root"] = log.root().hex();
  }
  return out;
}

}  // namespace

std::optional<nlohmann::json> Ledger::apply_dispute(const std::string &name, const nlohmann::json &call) {
  const commit::JsonFields f(call, name);
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
        const commit::JsonFields e(list[j], where);
        e.only({"step_leaf", "leaf_proof"});
        leaves.push_back({e.hex("step_leaf"), e.hex("leaf_proof")});
      } else {
        const nlohmann::json wrapped = {{"claim", list[j]}};
        digests.push_back(commit::JsonFields(wrapped, where).digest("claim"));
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
  return std::nullopt;
}

nlohmann::json Ledger::dispute_json(const DisputeInfo &i) {
  return {{"dispute_id", i.id},
          {"run_id", i.run_id.hex()},
          {"miner", to_hex(i.miner)},
          {"challenger", to_hex(i.challenger)},
          {"opened_lo", i.opened_lo},
          {"opened_hi", i.opened_hi},
          {"opened_height", i.opened_height},
          {"lo", i.lo},
          {"hi", i.hi},
          {"agreed", i.agreed.hex()},
          {"miner_hi", i.miner_hi.hex()},
          {"challenger_hi", i.challenger_hi.hex()},
          {"rounds", i.rounds},
          {"points", i.points},
          {"deadline", i.deadline},
          {"miner_claimed", i.miner_claimed},
          {"challenger_claimed", i.challenger_claimed}};
}

}  // namespace pot::game
