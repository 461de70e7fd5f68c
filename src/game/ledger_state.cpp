// The ledger's persistent state (docs/ledger.md section 4): save writes the
// canonical pot.v2.LedgerState; load reads it back and accepts only a state
// this ledger could have reached, one named check at a time, in this order
// (a state with several faults always reports the same one): the encoding,
// the config, the verifiers, tasks, runs and closed runs, the randomness,
// the challenges, the randomness kept, the disputes, the outcome log's
// record counts, the draws, and finally the canonical form. Every violation
// is kMalformed naming the element and the rule.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "challenge/challenge.h"
#include "codec/canonical.h"
#include "common/error.h"
#include "game/ledger.h"
#include "game/ledger_util.h"
#include "hash/rfc6962.h"
#include "pot/v2/ledger.pb.h"
#include "statecheck/state_flags.h"

namespace pot::game {

using dispute::Party;
using hash::Digest;
using witness::Kind;
using namespace ledger_util;

namespace {

constexpr uint32_t kStateFormatVersion = 7;

void put(std::string *dst, const Digest &d) {
  dst->assign(reinterpret_cast<const char *>(d.bytes.data()), d.bytes.size());
}

void put(v2::LedgerRandomness *dst, uint64_t height, const Digest &value) {
  dst->set_height(height);
  put(dst->mutable_value(), value);
}

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
struct BisectionBounds {
  uint64_t first_lo = 0, first_hi = 0;
  bool done = false;
  uint32_t arity = 2;
  uint64_t window = 1;
  uint64_t from = 0, to = 0;
  uint64_t grace = 0;  // the miner's (party A's)
};

template <typename M>
dispute::TimedBisection load_bisection(const M &m, const std::string &where, const BisectionBounds &k) {
  if (m.lo() < k.first_lo || m.hi() > k.first_hi || m.lo() >= m.hi() || (m.hi() == m.lo() + 1) != k.done)
    bad_state(fmt::format("{}: a current interval ({}, {}] that is not {} part of ({}, {}]", where, m.lo(), m.hi(),
                          k.done ? "a one-step" : "an open", k.first_lo, k.first_hi));
  if (m.rounds() > dispute::bisection_rounds(k.first_lo, k.first_hi, k.arity))
    bad_state(fmt::format("{}: {} rounds played, more than the bisection takes", where, m.rounds()));
  if (k.from > m.round_start() || m.round_start() > k.to)
    bad_state(fmt::format("{}: a round started at height {}, outside {}..{}", where, m.round_start(), k.from, k.to));
  const Digest agreed = digest_field(m.agreed(), where + " agreed");
  const Digest miner_hi = digest_field(m.miner_hi(), where + " miner_hi");
  const Digest challenger_hi = digest_field(m.challenger_hi(), where + " challenger_hi");
  dispute::TimedBisection b = as_state_check(where, [&] {
    return dispute::TimedBisection(m.lo(), m.hi(), k.arity, agreed, miner_hi, challenger_hi, k.window,
                                   m.round_start(), k.grace);
  });
  if (m.pending_party() > 2) bad_state(fmt::format("{}: pending_party {}", where, m.pending_party()));
  if (m.pending_party() != 0) {
    if (m.pending_height() > k.to)
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

void save_node_opening(const OpeningOnLedger &o, v2::LedgerNodeOpening *m) {
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

OpeningOnLedger load_node_opening(const v2::LedgerNodeOpening &m, const std::string &where) {
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

// Bounds the input (parsing allocates in proportion to it), then parses a
// pot.v2.LedgerState of this SDK's format.
v2::LedgerState parse_state(ByteView b) {
  if (b.size() > kMaxLedgerStateBytes)
    fail(Status::kLimit, "ledger state of {} bytes, the limit is {}", b.size(), kMaxLedgerStateBytes);
  // Canonical minimum sizes of the repeated elements (ledger.proto): a run
  // holds a run_id (34 bytes) and a commitment; a challenge a run_id; a
  // witness commitment an identity and a digest; a reveal an identity (3
  // bytes or more), a salt of 16 bytes or more (18), a kind (2), a
  // framework_version, intra_op_threads and hardware_class (3, 2, 3); a
  // task its task_id and the task; a randomness entry its value; a closed
  // run its run_id, task_id, miner identity, declared_steps, root and
  // initial_state_digest; an account its identity and free balance.
  codec::check_min_sizes(
      b,
      {{5, 34}, {6, 34, {{9, 37}, {10, 31}, {13, 5}, {18, 1}}}, {7, 36}, {9, 34}, {10, 5}, {11, 71}, {13, 141},
       {15, 5}},
      "ledger state");
  v2::LedgerState p;
  if (!p.ParseFromArray(b.data(), static_cast<int>(b.size())))
    bad_state("the bytes are not a pot.v2.LedgerState message");
  if (p.format_version() != kStateFormatVersion)
    bad_state(fmt::format("format_version {} is not supported (this SDK writes {}{})", p.format_version(),
                          kStateFormatVersion,
                          p.format_version() == 2   ? "; format 2 had no disputes and no dispute config"
                          : p.format_version() == 3 ? "; format 3 had no referee and no operator phase"
                          : p.format_version() == 4
                              ? "; format 4 kept no root of a closed run and no dispute a miner lost"
                          : p.format_version() == 5
                              ? "; format 5 (pot 0.2) held no balances and no bonds: its tasks and runs are "
                                "unbonded, so it cannot be carried over"
                          : p.format_version() == 6
                              ? "; format 6 sealed runs without their flagged steps, whose leaves (version 2) "
                                "committed no statistics"
                              : ""));
  if (!p.has_config()) bad_state("the config is missing");
  return p;
}

LedgerConfig config_of(const v2::LedgerConfig &m) {
  LedgerConfig config;
  config.draw_delay = m.draw_delay();
  config.opening_window = m.opening_window();
  config.commit_window = m.commit_window();
  config.reveal_window = m.reveal_window();
  config.max_committee_size = m.max_committee_size();
  config.min_stake = m.min_stake();
  config.max_rounds = m.max_rounds();
  config.max_attempts = m.max_attempts();
  config.dispute_window = m.dispute_window();
  config.dispute_arity = m.dispute_arity();
  config.referee = to_bytes(view_of(m.referee()));
  config.task_bond = m.task_bond();
  config.miner_bond = m.miner_bond();
  config.dispute_bond = m.dispute_bond();
  config.max_task_blocks = m.max_task_blocks();
  config.max_open_tasks = m.max_open_tasks();
  config.miner_grace = m.miner_grace();
  return config;
}

void save_config(const LedgerConfig &c, v2::LedgerConfig *cfg) {
  cfg->set_commit_window(c.commit_window);
  cfg->set_reveal_window(c.reveal_window);
  cfg->set_max_committee_size(c.max_committee_size);
  cfg->set_min_stake(c.min_stake);
  cfg->set_max_rounds(c.max_rounds);
  cfg->set_opening_window(c.opening_window);
  cfg->set_draw_delay(c.draw_delay);
  cfg->set_max_attempts(c.max_attempts);
  cfg->set_dispute_window(c.dispute_window);
  cfg->set_dispute_arity(c.dispute_arity);
  cfg->set_referee(as_string(c.referee));
  cfg->set_task_bond(c.task_bond);
  cfg->set_miner_bond(c.miner_bond);
  cfg->set_dispute_bond(c.dispute_bond);
  cfg->set_max_task_blocks(c.max_task_blocks);
  cfg->set_max_open_tasks(c.max_open_tasks);
  cfg->set_miner_grace(c.miner_grace);
}

}  // namespace

// Saving: the ledger's maps are sorted by key, bytewise, so the repeated
// fields come out in canonical order.
class LedgerStateWriter {
 public:
  static Bytes save(const Ledger &l) {
    v2::LedgerState p;
    p.set_format_version(kStateFormatVersion);
    save_config(l.config_, p.mutable_config());
    p.set_height(l.height_);
    p.set_next_challenge_id(l.next_challenge_id_);
    for (const auto &[run_id, r] : l.runs_) save_run(run_id, r, p.add_runs());
    for (const auto &[id, t] : l.tasks_) {
      v2::LedgerTask *m = p.add_tasks();
      put(m->mutable_task_id(), id);
      m->set_task(as_string(t.bytes));
      m->set_program_fault(t.program_fault);
    }
    for (const auto &[id, c] : l.challenges_) save_challenge(id, c, p.add_challenges());
    for (const auto &[identity, v] : l.verifiers_) {
      v2::LedgerVerifier *w = p.add_verifiers();
      w->set_identity(as_string(identity));
      w->set_stake(v.stake);
      w->set_registered_height(v.registered_height);
    }
    if (l.last_randomness_) put(p.mutable_last_randomness(), l.last_randomness_->height, l.last_randomness_->value);
    for (const auto &[height, value] : l.randomness_) put(p.add_randomness(), height, value);
    for (const auto &[run_id, r] : l.closed_) save_closed_run(run_id, r, p.add_closed_runs());
    if (l.outcomes_.size() > 0) p.set_outcome_log(as_string(l.outcomes_.save()));
    for (const auto &[id, d] : l.disputes_) save_dispute(id, d, p.add_disputes());
    p.set_next_dispute_id(l.next_dispute_id_);
    for (const auto &[identity, b] : l.book_.accounts()) {
      if (b.free == 0) continue;  // its bonds are rebuilt from the records
      v2::LedgerAccount *a = p.add_accounts();
      a->set_identity(as_string(identity));
      a->set_free(b.free);
    }
    p.set_burned(l.book_.burned());
    p.set_held(l.book_.held());
    // Saving more than load accepts would produce a state nobody can restore.
    const size_t n = p.ByteSizeLong();
    if (n > kMaxLedgerStateBytes)
      fail(Status::kLimit, "ledger state of {} bytes exceeds the limit of {}", n, kMaxLedgerStateBytes);
    const std::string s = p.SerializeAsString();
    return Bytes(s.begin(), s.end());
  }

 private:
  static void save_run(const Digest &run_id, const Ledger::Run &r, v2::LedgerRun *m) {
    put(m->mutable_run_id(), run_id);
    m->set_commitment(as_string(r.commitment_bytes));
    m->set_latest_size(r.latest_size);
    if (r.latest_size > 0) put(m->mutable_latest_root(), r.latest_root);
    if (r.sealed()) m->set_seal_height(r.seal_height);
    if (r.drawn_from) put(m->mutable_drawn_from(), r.drawn_from->height, r.drawn_from->value);
    m->set_lost_dispute(r.lost_dispute);
    for (uint64_t f : r.flagged_steps) m->add_flagged_steps(f);
    if (r.final_state) m->set_final_state(as_string(r.final_state->view()));
  }

  static void save_closed_run(const Digest &run_id, const Ledger::ClosedRun &r, v2::LedgerClosedRun *m) {
    put(m->mutable_run_id(), run_id);
    put(m->mutable_task_id(), r.task_id);
    m->set_miner_identity(as_string(r.miner_identity));
    m->set_slashable(r.slashable);
    m->set_declared_steps(r.declared_steps);
    put(m->mutable_root(), r.root);
    put(m->mutable_initial_state_digest(), r.initial_state_digest);
  }

  static void save_reveal(const Bytes &identity, const Ledger::Reveal &r, v2::LedgerWitnessReveal *w) {
    w->set_identity(as_string(identity));
    const witness::Finding &f = r.finding;
    w->set_kind(static_cast<uint32_t>(f.kind));
    if (f.kind == Kind::kReplayed) {
      put(w->mutable_replayed_state(), f.replayed_state);
      w->set_bucket(f.bucket);
      put(w->mutable_gradient_digest(), f.gradient_digest);
    } else if (f.kind == Kind::kInvalidOpening) {
      w->set_check(static_cast<uint32_t>(f.check));
    }
    w->set_framework_version(f.environment.framework_version);
    w->set_intra_op_threads(f.environment.intra_op_threads);
    w->set_hardware_class(f.environment.hardware_class);
    w->set_salt(as_string(r.salt));
  }

  static void save_challenge(uint64_t id, const Ledger::Challenge &c, v2::LedgerChallenge *m) {
    m->set_id(id);
    put(m->mutable_run_id(), c.run_id);
    m->set_step(c.step);
    m->set_mode(c.mode == Mode::kNormBucket ? v2::LEDGER_MODE_NORM_BUCKET : v2::LEDGER_MODE_BITWISE);
    if (c.opening) {
      put(m->mutable_opening()->mutable_manifest_digest(), c.opening->manifest_digest);
      put(m->mutable_opening()->mutable_state_digest(), c.opening->state_digest);
      m->mutable_opening()->set_update_norm(c.opening->update_norm);
      m->mutable_opening()->set_height(c.opening->height);
    }
    for (const auto &[identity, commitment] : c.commits) {
      v2::LedgerWitnessCommit *w = m->add_commits();
      w->set_identity(as_string(identity));
      put(w->mutable_commitment(), commitment);
    }
    for (const auto &[identity, r] : c.reveals) save_reveal(identity, r, m->add_reveals());
    if (c.outcome) {
      v2::LedgerVerdict *v = m->mutable_verdict();
      v->set_verdict(static_cast<v2::LedgerVerdictKind>(static_cast<int>(c.outcome->verdict)));
      v->set_cluster_size(c.outcome->cluster_size);
      v->set_cluster_stake(c.outcome->cluster_stake);
      v->set_outcome_index(c.outcome->outcome_index);
    }
    m->set_issued_height(c.issued_height);
    for (const auto &[identity, stake] : c.committee) {
      v2::LedgerMember *w = m->add_committee();
      w->set_identity(as_string(identity));
      w->set_stake(stake);
    }
    m->set_redraws(c.attempt - 1);
    if (c.awaiting) m->set_awaiting_redraw_from(*c.awaiting);
    if (c.redrawn_from) put(m->mutable_redrawn_from(), c.redrawn_from->height, c.redrawn_from->value);
    m->set_redrawn_height(c.redrawn_height);
    for (const Bytes &identity : c.excluded) m->add_excluded(as_string(identity));
  }

  static void save_dispute(uint64_t id, const Ledger::Dispute &d, v2::LedgerDispute *m) {
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
    if (d.miner_opening) save_node_opening(*d.miner_opening, m->mutable_miner_opening());
    if (d.challenger_opening) save_node_opening(*d.challenger_opening, m->mutable_challenger_opening());
  }
};

Bytes Ledger::save() const { return LedgerStateWriter::save(*this); }

// Loading: one pass per kind of element, in the order of the file's header
// comment; `l` is built as the calls would have built it, then every
// cross-check that needs the whole state runs.
class LedgerStateReader {
 public:
  static Ledger load(ByteView b) {
    const v2::LedgerState p = parse_state(b);
    Ledger l = as_state_check("config", [&] { return Ledger(config_of(p.config())); });
    LedgerStateReader r(l, p);
    r.read_head();
    r.read_verifiers();
    r.read_tasks();
    r.read_runs();
    r.read_closed_runs();
    if (!p.outcome_log().empty())
      l.outcomes_ = as_state_check("outcome_log", [&] { return merkle::Log::load(view_of(p.outcome_log())); });
    r.read_randomness();
    for (const v2::LedgerChallenge &m : p.challenges()) r.read_challenge(m);
    r.check_randomness_kept();
    r.read_disputes();
    r.read_accounts();
    r.check_outcome_log();
    for (auto &[run_id, run] : l.runs_)
      if (run.drawn_from) r.check_draw(run_id, run);
    // Sorted, unique keys, no default values, no unknown fields: all follow
    // from re-encoding the state and comparing.
    if (l.save() != Bytes(b.begin(), b.end())) bad_state("the bytes are not in canonical form");
    return l;
  }

 private:
  using Run = Ledger::Run;
  using Challenge = Ledger::Challenge;

  LedgerStateReader(Ledger &l, const v2::LedgerState &p) : l_(l), p_(p), config_(l.config_) {}

  static BlockRandomness randomness_of(const v2::LedgerRandomness &m, const std::string &where) {
    return BlockRandomness{m.height(), digest_field(m.value(), where + " value")};
  }

  // Whether a value at a height could have been posted: at most at the
  // latest post's height, and that post's value at its height.
  bool could_be_posted(const BlockRandomness &e) const {
    return l_.last_randomness_ && e.height <= l_.last_randomness_->height &&
           (e.height != l_.last_randomness_->height || e.value == l_.last_randomness_->value);
  }

  void read_head() {
    l_.height_ = p_.height();
    l_.next_challenge_id_ = p_.next_challenge_id();
    if (!p_.has_last_randomness()) return;
    l_.last_randomness_ = randomness_of(p_.last_randomness(), "last_randomness");
    if (l_.last_randomness_->height > l_.height_)
      bad_state(fmt::format("randomness of height {} posted above the height {}", l_.last_randomness_->height,
                            l_.height_));
  }

  void read_verifiers() {
    for (const v2::LedgerVerifier &m : p_.verifiers()) {
      const ByteView identity = view_of(m.identity());
      const std::string where = "verifier " + to_hex(identity);
      as_state_check(where, [&] { check_caller(identity, "register_verifier"); });
      if (m.stake() < config_.min_stake) bad_state(where + ": a stake below min_stake");
      if (m.registered_height() > l_.height_) bad_state(where + ": registered above the height");
      if (m.stake() > UINT64_MAX - l_.total_stake_) bad_state(where + ": the stakes sum past 2^64 - 1");
      if (!l_.verifiers_.emplace(to_bytes(identity), Ledger::Verifier{m.stake(), m.registered_height()}).second)
        bad_state(where + " is listed twice");
      l_.total_stake_ += m.stake();
    }
  }

  void read_tasks() {
    for (const v2::LedgerTask &m : p_.tasks()) {
      const Digest id = digest_field(m.task_id(), "task_id");
      const std::string where = "task " + id.hex();
      Ledger::TaskRecord t;
      t.bytes = to_bytes(view_of(m.task()));
      t.task = as_state_check(where, [&] { return task::Task::decode(t.bytes); });
      if (t.task.id() != id) bad_state(where + ": task_id is not the task's digest");
      t.program_fault = m.program_fault();
      if (t.task.challenge_rounds > config_.max_rounds)
        bad_state(fmt::format("{}: {} challenge rounds, the config allows {}", where, t.task.challenge_rounds,
                              config_.max_rounds));
      if (t.task.committee_size > config_.max_committee_size)
        bad_state(fmt::format("{}: committees of {}, the config allows {}", where, t.task.committee_size,
                              config_.max_committee_size));
      if (!l_.tasks_.emplace(id, std::move(t)).second) bad_state(where + " is listed twice");
    }
  }

  // A run's posted roots, its seal and its draw.
  void read_progress(const v2::LedgerRun &m, const task::Task &task, const std::string &where, Run &r) {
    r.latest_size = m.latest_size();
    if (r.latest_size > r.commitment.declared_steps)
      bad_state(fmt::format("{}: latest_size {} exceeds declared_steps {}", where, r.latest_size,
                            r.commitment.declared_steps));
    if (r.latest_size > 0)
      r.latest_root = digest_field(m.latest_root(), where + ": latest_root");
    else if (!m.latest_root().empty())
      bad_state(where + ": a root without a posted size");
    r.seal_height = m.seal_height();
    if (!r.sealed() && r.seal_height != 0) bad_state(where + ": a seal height, but not sealed");
    r.lost_dispute = r.slashable = m.lost_dispute();
    if (r.lost_dispute && !r.sealed()) bad_state(where + ": a lost dispute, but not sealed");
    if (r.seal_height > l_.height_) bad_state(where + ": sealed above the height");
    if (r.seal_height > task.end_height) bad_state(where + ": sealed after its task's end_height");
    if (r.sealed() && config_.draw_delay > UINT64_MAX - r.seal_height)
      bad_state(where + ": a draw height past 64 bits");
    r.flagged_steps.assign(m.flagged_steps().begin(), m.flagged_steps().end());
    if (!r.flagged_steps.empty() && !r.sealed()) bad_state(where + ": flagged steps, but not sealed");
    if (r.flagged_steps.size() > task.challenge_rounds)
      bad_state(fmt::format("{}: {} flagged steps, its task's rounds are {}", where, r.flagged_steps.size(),
                            task.challenge_rounds));
    if (statecheck::misplaced_step(r.flagged_steps, r.commitment.declared_steps))
      bad_state(where + ": flagged steps that do not ascend within its steps");
    if (!m.final_state().empty()) r.final_state = digest_field(m.final_state(), where + ": final_state");
    if (r.final_state.has_value() != (r.sealed() && task.one_trajectory()))
      bad_state(where + ": a final state is kept exactly for a sealed run of a one-trajectory task");
    if (m.has_drawn_from()) {
      r.drawn_from = randomness_of(m.drawn_from(), where + ": drawn_from");
      if (!r.sealed()) bad_state(where + ": drawn before it was sealed");
      // Posted at most at the latest post's height, with its value there.
      if (r.drawn_from->height < l_.draw_height(r) || !could_be_posted(*r.drawn_from))
        bad_state(where + ": drawn from randomness no post could have given it");
    } else if (r.sealed()) {
      ++l_.waiting_[l_.draw_height(r)];
    }
  }

  void read_runs() {
    for (const v2::LedgerRun &m : p_.runs()) {
      const Digest run_id = digest_field(m.run_id(), "run_id");
      const std::string where = "run " + run_id.hex();
      Run r;
      r.commitment_bytes = to_bytes(view_of(m.commitment()));
      r.commitment = as_state_check(where + ": commitment",
                                    [&] { return commit::TrainingCommitment::decode(r.commitment_bytes); });
      if (r.commitment.run_id() != run_id) bad_state(where + ": run_id is not the commitment's digest");
      auto task = l_.tasks_.find(r.commitment.task_id);
      if (task == l_.tasks_.end()) bad_state(where + ": its task is not posted");
      // Every field is re-checked but a run-seeded run's schedule root, which
      // start_training_commitment recomputed (docs/ledger.md section 4).
      as_state_check(where, [&] { task::check_commitment(task->second.task, r.commitment, false); });
      read_progress(m, task->second.task, where, r);
      if (!l_.run_keys_.emplace(Ledger::RunKey{r.commitment.task_id, r.commitment.miner_identity}, run_id).second)
        bad_state(where + ": its task already holds a run of the same miner");
      if (!l_.runs_.emplace(run_id, std::move(r)).second) bad_state(where + " is listed twice");
    }
    // A one-trajectory task pays a trajectory once (docs/ledger.md 2.3).
    std::set<std::pair<Digest, Digest>> finals;
    for (const auto &[run_id, r] : l_.runs_)
      if (r.final_state && !finals.emplace(r.commitment.task_id, *r.final_state).second)
        bad_state("run " + run_id.hex() + ": another run of its task sealed with the same final state");
  }

  void read_closed_runs() {
    for (const v2::LedgerClosedRun &m : p_.closed_runs()) {
      const Digest run_id = digest_field(m.run_id(), "closed run_id");
      const std::string where = "closed run " + run_id.hex();
      Ledger::ClosedRun r;
      r.task_id = digest_field(m.task_id(), where + ": task_id");
      r.miner_identity = to_bytes(view_of(m.miner_identity()));
      as_state_check(where + ": miner", [&] { check_caller(r.miner_identity, "start_training_commitment"); });
      r.slashable = m.slashable();
      r.declared_steps = m.declared_steps();
      if (r.declared_steps == 0) bad_state(where + ": declared_steps 0");
      r.root = digest_field(m.root(), where + ": root");
      r.initial_state_digest = digest_field(m.initial_state_digest(), where + ": initial_state_digest");
      if (!l_.tasks_.contains(r.task_id)) bad_state(where + ": its task is not posted");
      if (l_.runs_.contains(run_id)) bad_state(where + " is also open");
      if (!l_.run_keys_.emplace(Ledger::RunKey{r.task_id, r.miner_identity}, run_id).second)
        bad_state(where + ": its task already holds a run of the same miner");
      if (!l_.closed_.emplace(run_id, std::move(r)).second) bad_state(where + " is listed twice");
    }
  }

  // Every stored randomness entry is one that was posted; which ones are
  // kept is checked once every waiter is known (check_randomness_kept).
  void read_randomness() {
    for (const v2::LedgerRandomness &m : p_.randomness()) {
      const std::string where = fmt::format("randomness of height {}", m.height());
      const BlockRandomness e = randomness_of(m, where);
      if (!could_be_posted(e)) bad_state(where + ": not a value that was posted");
      if (!l_.randomness_.emplace(e.height, e.value).second) bad_state(where + " is listed twice");
    }
  }

  // ---- a challenge ----

  // Its run (open and drawn), its step and mode, and its issue height.
  Run &read_issue(const v2::LedgerChallenge &m, const std::string &where, Challenge &c) {
    if (m.id() >= l_.next_challenge_id_) bad_state(where + ": its id was never issued");
    c.run_id = digest_field(m.run_id(), where + ": run_id");
    auto run = l_.runs_.find(c.run_id);
    if (run == l_.runs_.end())
      bad_state(where + (l_.closed_.contains(c.run_id) ? ": its run is closed (its challenges are pruned)"
                                                        : ": its run is unknown"));
    Run &r = run->second;
    if (!r.drawn_from) bad_state(where + ": its run was not drawn");
    challenges_per_run_[c.run_id].emplace_back(m.id(), m.step());
    c.step = m.step();
    if (c.step == 0 || c.step > r.commitment.declared_steps) bad_state(where + ": step outside the run");
    if (m.mode() == v2::LEDGER_MODE_BITWISE)
      c.mode = Mode::kBitwise;
    else if (m.mode() == v2::LEDGER_MODE_NORM_BUCKET)
      c.mode = Mode::kNormBucket;
    else
      bad_state(fmt::format("{}: unknown mode {}", where, static_cast<int>(m.mode())));
    if ((c.mode == Mode::kNormBucket) != (l_.task_of(r).challenge_mode == task::ChallengeMode::kNormBucket))
      bad_state(where + ": its mode is not its task's");
    c.issued_height = m.issued_height();
    // Issued once the randomness was posted, at most at the height, with
    // deadlines that fit 64 bits (issue_challenge checks it).
    if (c.issued_height < r.drawn_from->height || c.issued_height > l_.height_ ||
        !config_.deadlines_fit(c.issued_height))
      bad_state(where + ": an issue height that does not follow from its run, the config and the height");
    return r;
  }

  void read_opening(const v2::LedgerChallenge &m, const std::string &where, Challenge &c) {
    if (!m.has_opening()) return;
    c.opening = Ledger::Opening{m.opening().height(),
                                digest_field(m.opening().manifest_digest(), where + ": manifest_digest"),
                                digest_field(m.opening().state_digest(), where + ": state_digest"),
                                m.opening().update_norm()};
    // A step leaf cannot commit a norm with its sign bit set (section 10).
    if (std::signbit(c.opening->update_norm)) bad_state(where + ": an opened update norm with its sign bit set");
    if (c.opening->height < c.issued_height || c.opening->height > l_.opening_deadline(c) ||
        c.opening->height > l_.height_)
      bad_state(where + ": opened outside its opening phase");
  }

  // Re-runs: attempt 1 is the run's draw; a later one was redrawn, once
  // opened, from randomness that could have been posted.
  void read_attempts(const v2::LedgerChallenge &m, const std::string &where, Challenge &c) {
    if (m.redraws() >= config_.max_attempts) bad_state(where + ": more committees than max_attempts");
    c.attempt = m.redraws() + 1;
    if (c.attempt > 1) {
      if (!m.has_redrawn_from() || !c.opening) bad_state(where + ": a redraw without its randomness or an opening");
      c.redrawn_from = randomness_of(m.redrawn_from(), where + ": redrawn_from");
      c.redrawn_height = m.redrawn_height();
      if (!could_be_posted(*c.redrawn_from) || c.redrawn_from->height <= c.opening->height ||
          c.redrawn_height < c.redrawn_from->height || c.redrawn_height > l_.height_ ||
          config_.commit_window > UINT64_MAX - c.redrawn_height ||
          config_.reveal_window > UINT64_MAX - c.redrawn_height - config_.commit_window)
        bad_state(where + ": a redraw at heights the calls could not give");
    } else if (m.has_redrawn_from() || m.redrawn_height() != 0) {
      bad_state(where + ": a redraw on the first committee");
    }
    for (const std::string &e : m.excluded()) {
      as_state_check(where + ": excluded", [&] { check_caller(view_of(e), "redraw_committee"); });
      if (!c.excluded.insert(to_bytes(view_of(e))).second) bad_state(where + ": an excluded member listed twice");
    }
    if (m.awaiting_redraw_from() != 0) {
      // Set by a finalization after the reveal phase, at most at the height.
      c.awaiting = m.awaiting_redraw_from();
      if (!c.opening || c.attempt >= config_.max_attempts || m.has_verdict() || m.committee_size() > 0 ||
          m.commits_size() > 0 || m.reveals_size() > 0 || *c.awaiting < config_.draw_delay ||
          *c.awaiting - config_.draw_delay <= l_.reveal_deadline(c) ||
          *c.awaiting - config_.draw_delay > l_.height_)
        bad_state(where + ": awaiting a redraw it could not await");
      ++l_.waiting_[*c.awaiting];
    } else if (c.attempt == 1 && !c.excluded.empty()) {
      bad_state(where + ": excluded members before any re-run");
    }
  }

  // The committee (checked against the draw by check_draw), the witness
  // commitments of its members, and the reveals that open them.
  void read_witnesses(const v2::LedgerChallenge &m, const std::string &where, Challenge &c) {
    for (const v2::LedgerMember &w : m.committee())
      if (!c.committee.emplace(to_bytes(view_of(w.identity())), w.stake()).second)
        bad_state(where + ": a committee member listed twice");
    if (m.commits_size() > 0 && !c.opening) bad_state(where + ": witness commits before the opening");
    for (const v2::LedgerWitnessCommit &w : m.commits()) {
      const ByteView identity = view_of(w.identity());
      as_state_check(where + ": witness", [&] { check_caller(identity, "commit_witness"); });
      if (!c.committee.contains(to_bytes(identity))) bad_state(where + ": a witness not on the committee");
      if (!c.commits.emplace(to_bytes(identity), digest_field(w.commitment(), where + ": commitment")).second)
        bad_state(where + ": a witness committed twice");
    }
    if (m.reveals_size() > 0 && l_.height_ <= l_.commit_deadline(c))
      bad_state(where + ": reveals during the commit phase");
    for (const v2::LedgerWitnessReveal &w : m.reveals()) read_reveal(m.id(), w, where, c);
  }

  void read_reveal(uint64_t id, const v2::LedgerWitnessReveal &w, const std::string &where, Challenge &c) {
    Bytes identity = to_bytes(view_of(w.identity()));
    auto committed = c.commits.find(identity);
    if (committed == c.commits.end()) bad_state(where + ": a reveal without a commitment");
    Ledger::Reveal rv;
    rv.salt = to_bytes(view_of(w.salt()));
    witness::Finding &f = rv.finding;
    f.kind = static_cast<Kind>(w.kind());
    // Fields the kind does not use stay absent: the canonical re-encoding
    // refuses them.
    if (f.kind == Kind::kReplayed) {
      f.replayed_state = digest_field(w.replayed_state(), where + ": replayed_state");
      f.bucket = w.bucket();
      f.gradient_digest = digest_field(w.gradient_digest(), where + ": gradient_digest");
    }
    if (f.kind == Kind::kInvalidOpening) f.check = static_cast<commit::OpeningCheck>(w.check());
    f.environment = {w.framework_version(), w.intra_op_threads(), w.hardware_class()};
    as_state_check(where + ": reveal of " + to_hex(identity), [&] {
      witness::verify_reveal(committed->second, Ledger::statement(id, c, f), rv.salt, identity);
    });
    if (!c.reveals.emplace(std::move(identity), std::move(rv)).second) bad_state(where + ": a witness revealed twice");
  }

  // A stored verdict is the one the reveals yield, once the last phase closed.
  void read_verdict(const v2::LedgerChallenge &m, const std::string &where, Challenge &c, Run &r) {
    if (!m.has_verdict()) return;
    if (l_.height_ <= l_.final_after(c)) bad_state(where + ": final before its last phase closed");
    const ChallengeVerdict v = l_.judge(c);
    if (static_cast<int>(m.verdict().verdict()) != static_cast<int>(v.verdict) ||
        m.verdict().cluster_size() != v.cluster_size || m.verdict().cluster_stake() != v.cluster_stake)
      bad_state(where + ": the stored verdict is not the one its reveals yield");
    // The record itself is in the log, whose leaves the state does not
    // keep: the index is checked for range here, for uniqueness in
    // check_outcome_log.
    if (m.verdict().outcome_index() >= l_.outcomes_.size()) bad_state(where + ": an outcome index past the outcome log");
    c.outcome = Ledger::Final{v.verdict, v.cluster_size, v.cluster_stake, m.verdict().outcome_index()};
    if (v.verdict == Verdict::kFail) r.slashable = true;
    if (v.cause == Cause::kTaskProgram && !l_.tasks_.at(r.commitment.task_id).program_fault)
      bad_state(where + ": its committee found the task's program at fault, and the task is not marked so");
  }

  void read_challenge(const v2::LedgerChallenge &m) {
    const std::string where = fmt::format("challenge {}", m.id());
    Challenge c;
    Run &r = read_issue(m, where, c);
    read_opening(m, where, c);
    read_attempts(m, where, c);
    read_witnesses(m, where, c);
    read_verdict(m, where, c, r);
    if (!l_.challenges_.emplace(m.id(), std::move(c)).second) bad_state(where + " is listed twice");
  }

  // ---- once every waiter is known ----

  // The kept randomness is exactly what the waiters (sealed runs not drawn,
  // challenges awaiting a redraw) need, with the values their draws used.
  void check_randomness_kept() const {
    for (auto e = l_.randomness_.cbegin(); e != l_.randomness_.cend(); ++e)
      if (!l_.needed(e)) bad_state(fmt::format("randomness of height {} that no run waits for", e->first));
    if (l_.last_randomness_)
      for (const auto &[d, count] : l_.waiting_)
        if (d <= l_.last_randomness_->height && l_.randomness_for(d) == l_.randomness_.end())
          bad_state(fmt::format("a run waits for the randomness of height {}, which was posted but not kept", d));
    auto kept_differs = [&](const BlockRandomness &used) {
      auto e = l_.randomness_.find(used.height);
      return e != l_.randomness_.end() && e->second != used.value;
    };
    for (const auto &[run_id, r] : l_.runs_)
      if (r.drawn_from && kept_differs(*r.drawn_from))
        bad_state(fmt::format("run {}: drawn from another value than the one kept for its height", run_id.hex()));
    for (const auto &[id, c] : l_.challenges_)
      if (c.redrawn_from && kept_differs(*c.redrawn_from))
        bad_state(fmt::format("challenge {}: redrawn from another value than the one kept for its height", id));
  }

  // (A ledger with no task, verifier or randomness may have any height:
  // prune_task removes the last task and leaves the height it was called at.)
  // Every issued challenge is open, final with its run still open, or
  // pruned with its closed run, and each final one was logged once: the
  // log holds exactly the issued challenges that are not open. Each
  // attempt that ended logged one record: a kept challenge's ended attempts
  // are known, a pruned one had 1..max_attempts; each ended dispute logged
  // one record.
  void check_outcome_log() const {
    if (l_.outcomes_.size() < l_.ended_disputes())
      bad_state(fmt::format("an outcome log of {} records, for {} ended disputes", l_.outcomes_.size(),
                            l_.ended_disputes()));
    const uint64_t challenge_records = l_.outcomes_.size() - l_.ended_disputes();
    uint64_t kept_records = 0;
    std::set<uint64_t> indices;
    for (const auto &[id, c] : l_.challenges_) {
      kept_records += c.attempt - 1 + (c.awaiting || c.outcome ? 1 : 0);
      if (c.outcome && !indices.insert(c.outcome->outcome_index).second)
        bad_state(fmt::format("challenge {}: an outcome index another challenge holds", id));
    }
    const uint64_t pruned = l_.next_challenge_id_ - l_.challenges_.size();  // kept ids are distinct, below it
    auto more_than_the_pruned_could_log = [&](uint64_t x) {  // x > pruned * max_attempts, without overflow
      return x / config_.max_attempts + (x % config_.max_attempts != 0 ? 1 : 0) > pruned;
    };
    if (challenge_records < kept_records || challenge_records - kept_records < pruned ||
        more_than_the_pruned_could_log(challenge_records - kept_records))
      bad_state(fmt::format(
          "an outcome log of {} challenge records, for {} pruned challenges and {} records of kept ones",
          challenge_records, pruned, kept_records));
  }

  // A drawn run's challenges are the steps its randomness draws, in round
  // order, under consecutive ids, issued together; their committees are the
  // draw of the registry as it stood at the value's height (registrations
  // are never removed).
  void check_draw(const Digest &run_id, Run &r) {
    const std::string where = "run " + run_id.hex();
    const auto it = challenges_per_run_.find(run_id);
    if (it == challenges_per_run_.end()) bad_state(where + ": drawn, but without challenges");
    const std::vector<std::pair<uint64_t, uint64_t>> &got = it->second;  // sorted by id
    const std::vector<uint64_t> steps = l_.challenged_steps(r, run_id, r.drawn_from->value);
    bool same_draw = got.size() == steps.size();
    for (size_t i = 0; same_draw && i < got.size(); ++i)
      same_draw = got[i].first == got[0].first + i && got[i].second == steps[i] &&
                  l_.challenges_.at(got[i].first).issued_height == l_.challenges_.at(got[0].first).issued_height;
    if (!same_draw) bad_state(where + ": challenges that are not the draw of its randomness");
    const std::vector<std::vector<Candidate>> drawn = l_.committees_for(
        r, run_id, static_cast<uint32_t>(got.size()), r.drawn_from->height, r.drawn_from->value);
    for (size_t i = 0; i < got.size(); ++i) r.challenge_ids.push_back(got[i].first);
    for (size_t i = 0; i < got.size(); ++i) {
      const Challenge &c = l_.challenges_.at(got[i].first);
      // A redrawn committee is the draw of its own randomness without the
      // excluded members; one awaiting a redraw has none.
      const std::vector<Candidate> &from =
          c.awaiting ? std::vector<Candidate>{}
          : c.redrawn_from
              ? draw_committee(c.redrawn_from->value.view(), run_id, static_cast<uint32_t>(i),
                               l_.candidates_for(r, c.redrawn_from->height, c.excluded), l_.task_of(r).committee_size)
              : drawn[i];
      std::map<Bytes, uint64_t> want;
      for (const Candidate &m : from) want.emplace(m.identity, m.stake);
      if (c.committee != want)
        bad_state(fmt::format("challenge {}: a committee that is not the draw of its randomness", got[i].first));
    }
    if (std::ranges::all_of(r.challenge_ids, [&](uint64_t id) { return l_.challenges_.at(id).outcome.has_value(); }))
      bad_state(where + ": every challenge is final, but the run is not closed");
  }

  // ---- disputes ----

  void read_disputes() {
    l_.next_dispute_id_ = p_.next_dispute_id();
    for (const v2::LedgerDispute &m : p_.disputes()) read_dispute(m);
  }

  // The traces: none before their phase, each one's or none in it, both after it.
  static TraceCommitment read_trace(uint64_t size, const std::string &root_bytes, const char *who, DisputePhase phase,
                                    const std::string &where) {
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
  }

  // What a dispute's record is read into before it is built (a
  // TimedBisection has no empty state).
  struct DisputeParts {
    Bytes miner, challenger;
    DisputePhase phase = DisputePhase::kSteps;
    std::optional<dispute::TimedBisection> bisection, operators;
    TraceCommitment miner_trace, challenger_trace;
    std::optional<OpeningOnLedger> miner_opening, challenger_opening;
  };

  // The parties, the interval and the phase.
  void read_parties(const v2::LedgerDispute &m, const std::string &where, DisputeParts &d) const {
    if (m.id() >= l_.next_dispute_id_) bad_state(where + ": its id was never given");
    d.miner = to_bytes(view_of(m.miner()));
    d.challenger = to_bytes(view_of(m.challenger()));
    as_state_check(where + ": miner", [&] { check_caller(d.miner, "open_dispute"); });
    as_state_check(where + ": challenger", [&] { check_caller(d.challenger, "open_dispute"); });
    if (d.miner == d.challenger) bad_state(where + ": the miner is its own challenger");
    if (!l_.verifiers_.contains(d.challenger)) bad_state(where + ": the challenger is not a registered verifier");
    if (m.declared_steps() == 0 || m.opened_lo() >= m.opened_hi() || m.opened_hi() > m.declared_steps())
      bad_state(fmt::format("{}: an interval ({}, {}] outside a run of {} steps", where, m.opened_lo(), m.opened_hi(),
                            m.declared_steps()));
    if (m.phase() < 1 || m.phase() > 5) bad_state(fmt::format("{}: phase {} is not 1..5", where, m.phase()));
    d.phase = static_cast<DisputePhase>(m.phase());
    if (d.phase != DisputePhase::kSteps && config_.referee.empty())
      bad_state(fmt::format("{}: in the {} phase with no referee configured", where, dispute_phase_name(d.phase)));
  }

  // The step bisection, the phase's start, the traces and the operator
  // bisection over them.
  void read_bisections(const v2::LedgerDispute &m, const std::string &where, DisputeParts &d) const {
    const DisputePhase phase = d.phase;
    d.bisection = load_bisection(m, where,
                                 {m.opened_lo(), m.opened_hi(), phase != DisputePhase::kSteps, config_.dispute_arity,
                                  config_.dispute_window, m.opened_height(), l_.height_, config_.miner_grace});
    if (phase == DisputePhase::kSteps ? m.phase_start() != 0
                                      : m.phase_start() < d.bisection->round_start() || m.phase_start() > l_.height_)
      bad_state(fmt::format("{}: phase_start {} in the {} phase", where, m.phase_start(), dispute_phase_name(phase)));
    d.miner_trace = read_trace(m.miner_trace_size(), m.miner_trace_root(), "miner", phase, where);
    d.challenger_trace = read_trace(m.challenger_trace_size(), m.challenger_trace_root(), "challenger", phase, where);
    if (phase == DisputePhase::kTraces && d.miner_trace.size != 0 && d.challenger_trace.size != 0)
      bad_state(where + ": both traces committed in the traces phase");
    if (m.has_operators() != (phase >= DisputePhase::kOperators))
      bad_state(fmt::format("{}: an operator bisection {} the {} phase", where, m.has_operators() ? "in" : "missing in",
                            dispute_phase_name(phase)));
    if (!m.has_operators()) return;
    if (m.operators().lo() == 0 && m.operators().agreed() != as_string(hash::empty_root().view()))
      bad_state(where + ": the operator bisection does not start from the empty trace");
    d.operators = load_bisection(m.operators(), where + " operators",
                                 {0, std::max(d.miner_trace.size, d.challenger_trace.size),
                                  phase != DisputePhase::kOperators, config_.dispute_arity, config_.dispute_window,
                                  m.opened_height(), l_.height_, config_.miner_grace});
  }

  static void read_node_openings(const v2::LedgerDispute &m, const std::string &where, DisputeParts &d) {
    if (m.has_miner_opening()) d.miner_opening = load_node_opening(m.miner_opening(), where + " miner_opening");
    if (m.has_challenger_opening())
      d.challenger_opening = load_node_opening(m.challenger_opening(), where + " challenger_opening");
    const bool any = d.miner_opening || d.challenger_opening, both = d.miner_opening && d.challenger_opening;
    if ((d.phase < DisputePhase::kOpenings && any) || (d.phase == DisputePhase::kOpenings && both) ||
        (d.phase == DisputePhase::kReferee && !both))
      bad_state(fmt::format("{}: openings that do not fit the {} phase", where, dispute_phase_name(d.phase)));
    if (both && dispute::decide_without_backend(d.miner_opening->check, d.challenger_opening->check))
      bad_state(where + ": with the referee, but the ledger rules on these openings");
  }

  void read_dispute(const v2::LedgerDispute &m) {
    const std::string where = fmt::format("dispute {}", m.id());
    DisputeParts d;
    read_parties(m, where, d);
    const Digest run_id = digest_field(m.run_id(), where + " run_id");
    const Digest root = digest_field(m.root(), where + " root");
    read_bisections(m, where, d);
    read_node_openings(m, where, d);
    for (const auto &[id, other] : l_.disputes_)
      if (other.run_id == run_id && other.challenger == d.challenger)
        bad_state(fmt::format("{}: its challenger already disputes the run (dispute {})", where, id));
    Ledger::Dispute dispute{.run_id = run_id,
                            .miner = std::move(d.miner),
                            .challenger = std::move(d.challenger),
                            .declared_steps = m.declared_steps(),
                            .root = root,
                            .opened_lo = m.opened_lo(),
                            .opened_hi = m.opened_hi(),
                            .opened_height = m.opened_height(),
                            .rounds_before = m.rounds(),
                            .bisection = std::move(*d.bisection),
                            .phase = d.phase,
                            .phase_start = m.phase_start(),
                            .miner_trace = d.miner_trace,
                            .challenger_trace = d.challenger_trace,
                            .operators = std::move(d.operators),
                            .op_rounds_before = m.has_operators() ? m.operators().rounds() : 0,
                            .miner_opening = std::move(d.miner_opening),
                            .challenger_opening = std::move(d.challenger_opening)};
    if (!l_.disputes_.emplace(m.id(), std::move(dispute)).second) bad_state(where + " is listed twice");
  }

  // The free balances, then the bonds the records hold (docs/ledger.md
  // 2.18): every task's owner its task bond, every unslashed run's miner
  // its bond, every open dispute's challenger its bond; then the open tasks
  // per owner, within max_open_tasks.
  void read_accounts() {
    bond::Book &book = l_.book_;
    for (const v2::LedgerAccount &m : p_.accounts()) {
      const ByteView identity = view_of(m.identity());
      const std::string where = "account " + to_hex(identity);
      as_state_check(where, [&] {
        check_caller(identity, "deposit");
        book.restore_free(identity, m.free());
      });
    }
    const auto lock = [&](const Bytes &identity, uint64_t amount, const std::string &what) {
      as_state_check(what, [&] { book.restore_lock(identity, amount); });
    };
    for (const auto &[id, t] : l_.tasks_) {
      if (!t.program_fault) lock(t.task.owner, config_.task_bond, "task " + id.hex() + " bond");
      if (++l_.open_tasks_[t.task.owner] > config_.max_open_tasks)
        bad_state(fmt::format("owner {}: more than max_open_tasks ({}) tasks", to_hex(t.task.owner),
                              config_.max_open_tasks));
    }
    for (const auto &[id, r] : l_.runs_)
      if (Ledger::holds_bond(r.slashable)) lock(r.commitment.miner_identity, config_.miner_bond, "run " + id.hex() + " bond");
    for (const auto &[id, r] : l_.closed_)
      if (Ledger::holds_bond(r.slashable)) lock(r.miner_identity, config_.miner_bond, "closed run " + id.hex() + " bond");
    for (const auto &[id, d] : l_.disputes_)
      lock(d.challenger, config_.dispute_bond, fmt::format("dispute {} bond", id));
    book.restore_burned(p_.burned());
    // The stored sum catches an account or a bond holder left out.
    if (book.held() != p_.held())
      bad_state(fmt::format("the accounts and bonds sum to {}, the state says the ledger holds {}", book.held(),
                            p_.held()));
  }

  Ledger &l_;
  const v2::LedgerState &p_;
  const LedgerConfig &config_;
  std::map<Digest, std::vector<std::pair<uint64_t, uint64_t>>> challenges_per_run_;  // (id, step)
};

Ledger Ledger::load(ByteView b) { return LedgerStateReader::load(b); }

}  // namespace pot::game
