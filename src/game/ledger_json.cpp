// The ledger's JSON interface (docs/ledger.md section 5): one
// handler per call, each reading its arguments in the documented order (so a
// call with several bad arguments always reports the same one), making the
// C++ call and writing its results. A client of Ledger's public API only:
// the rules are in ledger.cpp, ledger_disputes.cpp and ledger_operators.cpp,
// the saved state in ledger_state.cpp.
#include <algorithm>
#include <array>
#include <string_view>

#include "codec/json_fields.h"
#include "common/error.h"
#include "game/ledger.h"

namespace pot::game {

using hash::Digest;
using nlohmann::json;

namespace {

const char *verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInconclusive:
      return "inconclusive";
  }
  return "unknown";
}

json or_null(bool present, json value) { return present ? std::move(value) : json(nullptr); }

json randomness_json(const BlockRandomness &r) { return {{"height", r.height}, {"value", r.value.hex()}}; }

json verdict_json(const ChallengeVerdict &v) {
  return {{"verdict", verdict_name(v.verdict)},
          {"reason", v.reason},
          {"cluster_size", v.cluster_size},
          {"cluster_stake", v.cluster_stake},
          {"miner_slashable", v.verdict == Verdict::kFail},
          {"cause", cause_name(v.cause)},
          {"minority", identities_json(v.minority)},
          {"silent", identities_json(v.silent)},
          {"misconfigured", identities_json(v.misconfigured)},
          {"unreplayed", identities_json(v.unreplayed)},
          {"outcome", to_hex(v.outcome.encode())},
          {"outcome_index", v.outcome_index}};
}

json opening_check_json(const dispute::OpeningCheck &c) {
  return {{"failure_rule", or_null(!c.failure_rule.empty(), c.failure_rule)},
          {"has_node", c.has_node},
          {"batch_deferred", c.batch_deferred},
          {"post_state", c.post_state},
          {"post_state_holds", c.post_state_holds}};
}

json dispute_json(const DisputeInfo &i) {
  auto trace = [](const TraceCommitment &t) {
    return or_null(t.size != 0, {{"size", t.size}, {"root", t.root.hex()}});
  };
  auto opening = [](const std::optional<OpeningOnLedger> &o) {
    if (!o) return json(nullptr);
    json out = opening_check_json(o->check);
    out["digest"] = o->digest.hex();
    return out;
  };
  json out = {{"dispute_id", i.id},
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
              {"miner_deadline", i.miner_deadline},
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

// A dispute call's result: the progress, its record when it ended the
// dispute, else the dispute as it now stands.
json progress_json(const Ledger &l, const DisputeProgress &p) {
  json out = {{"dispute_id", p.dispute_id}, {"ended", p.ended.has_value()}};
  if (p.ended) {
    out["record"] = to_hex(p.ended->encode());
    out["outcome"] = p.ended->to_json();
    out["outcome_index"] = p.outcome_index;
    out["outcome_root"] = l.outcome_root().hex();
  } else {
    out.update(dispute_json(l.dispute_info(p.dispute_id)));
  }
  return out;
}

using Fields = codec::JsonFields;

// ---- the calls that change the state ----

json post_task(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "task"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const Bytes task = f.hex("task");
  return {{"task_id", l.post_task(caller, task, now).hex()}};
}

json start_training_commitment(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "commitment"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const Bytes commitment = f.hex("commitment");
  return {{"run_id", l.start_training_commitment(caller, commitment, now).hex()}};
}

// An optional array of u64 (absent: empty), at most `most` long.
std::vector<uint64_t> u64_list(const Fields &f, const char *key, size_t most) {
  if (!f.has(key)) return {};
  const json &list = f.value(key);
  if (!list.is_array()) fail(Status::kInvalidArgument, "{}: must be an array", f.path(key));
  if (list.size() > most)
    fail(Status::kLimit, "{}: {} elements, at most {} are read", f.path(key), list.size(), most);
  std::vector<uint64_t> out;
  for (size_t j = 0; j < list.size(); ++j) {
    const json wrapped = {{"v", list[j]}};
    out.push_back(Fields(wrapped, fmt::format("{}[{}]", f.path(key), j)).u64("v"));
  }
  return out;
}

json post_checkpoint_root(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "run_id", "size", "root", "consistency_proof", "flagged_steps", "final_leaf",
          "final_leaf_proof"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const Digest run_id = f.digest("run_id");
  const uint64_t size = f.u64("size");
  const Digest root = f.digest("root");
  const Bytes proof = f.hex("consistency_proof");
  SealPost seal;
  seal.flagged_steps = u64_list(f, "flagged_steps", l.config().max_rounds);
  if (f.has("final_leaf")) seal.final_leaf = f.hex("final_leaf");
  if (f.has("final_leaf_proof")) seal.final_leaf_proof = f.hex("final_leaf_proof");
  l.post_checkpoint_root(caller, run_id, size, root, proof, now, seal);
  const RunInfo r = l.run_info(run_id);
  return {{"latest_size", r.latest_size}, {"sealed", r.sealed}};
}

json post_randomness(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "now", "randomness"});
  const uint64_t now = f.u64("now");
  const Digest randomness = f.digest("randomness");
  l.post_randomness(randomness, now);
  return json::object();
}

json register_verifier(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "stake"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t stake = f.u64("stake");
  l.register_verifier(caller, stake, now);
  return json::object();
}

json deposit(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "identity", "amount", "now"});
  const Bytes identity = f.hex("identity");
  const uint64_t amount = f.u64("amount");
  const uint64_t now = f.u64("now");
  l.deposit(identity, amount, now);
  return json::object();
}

json withdraw(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "amount", "now"});
  const Bytes caller = f.hex("caller");
  const uint64_t amount = f.u64("amount");
  const uint64_t now = f.u64("now");
  l.withdraw(caller, amount, now);
  return json::object();
}

json issue_challenge(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "now", "run_id"});
  const uint64_t now = f.u64("now");
  const Digest run_id = f.digest("run_id");
  const std::vector<uint64_t> ids = l.issue_challenge(run_id, now);
  json steps = json::array();
  for (uint64_t id : ids) steps.push_back(l.challenge_info(id).step);
  return {{"challenge_ids", ids}, {"steps", std::move(steps)}};
}

json submit_opening(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "challenge_id", "manifest_digest", "step_leaf", "leaf_proof"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("challenge_id");
  const Digest manifest = f.digest("manifest_digest");
  const Bytes leaf = f.hex("step_leaf");
  const Bytes proof = f.hex("leaf_proof");
  l.submit_opening(caller, id, manifest, leaf, proof, now);
  return json::object();
}

json commit_witness(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "challenge_id", "commitment"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("challenge_id");
  const Digest commitment = f.digest("commitment");
  l.commit_witness(caller, id, commitment, now);
  return json::object();
}

json reveal_witness_value(Ledger &l, const Fields &f, const json &call) {
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("challenge_id");
  const witness::Finding finding = witness::Finding::from_json(
      call, "reveal_witness_value", {"call", "caller", "now", "challenge_id", "salt"});
  const Bytes salt = f.hex("salt");
  l.reveal_witness_value(caller, id, finding, salt, now);
  return json::object();
}

json finalize_challenge(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "now", "challenge_id"});
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("challenge_id");
  const ChallengeVerdict v = l.finalize_challenge(id, now);
  json out = verdict_json(v);
  out["outcome_root"] = l.outcome_root().hex();  // after the append: the log of outcome_index + 1 records
  out["run_closed"] = l.run_info(v.outcome.run_id).closed;
  out["rerun"] = v.rerun;
  return out;
}

json redraw_committee(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "now", "challenge_id"});
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("challenge_id");
  l.redraw_committee(id, now);
  const ChallengeInfo c = l.challenge_info(id);
  json committee = json::array();
  for (const MemberInfo &m : c.committee) committee.push_back({{"identity", to_hex(m.identity)}, {"stake", m.stake}});
  return {{"attempt", c.attempt}, {"committee", std::move(committee)}, {"commit_deadline", c.commit_deadline}};
}

json prune_task(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "now", "task_id"});
  const uint64_t now = f.u64("now");
  const Digest id = f.digest("task_id");
  const PrunedTask p = l.prune_task(id, now);
  return {{"closed_runs", p.closed_runs}, {"void_runs", p.void_runs}, {"released", p.released}};
}

// ---- disputes ----

json open_dispute(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "run_id", "lo_leaf", "lo_proof", "hi_leaf", "hi_proof", "claim"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const Digest run_id = f.digest("run_id");
  const Bytes lo_leaf = f.hex("lo_leaf");
  const Bytes lo_proof = f.hex("lo_proof");
  const Bytes hi_leaf = f.hex("hi_leaf");
  const Bytes hi_proof = f.hex("hi_proof");
  const Digest claim = f.digest("claim");
  return progress_json(l, l.open_dispute(caller, run_id, lo_leaf, lo_proof, hi_leaf, hi_proof, claim, now));
}

json claim_dispute(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "dispute_id", "claims"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("dispute_id");
  const json &list = f.value("claims");
  if (!list.is_array()) fail(Status::kInvalidArgument, "{}: must be an array", f.path("claims"));
  if (list.size() >= dispute::kMaxArity)
    fail(Status::kInvalidArgument, "{}: {} claims, a round has at most {}", f.path("claims"), list.size(),
         dispute::kMaxArity - 1);
  std::vector<Digest> digests;
  std::vector<LeafClaim> leaves;
  for (size_t j = 0; j < list.size(); ++j) {
    const std::string where = fmt::format("{}[{}]", f.path("claims"), j);
    if (list[j].is_object()) {
      const Fields e(list[j], where);
      e.only({"step_leaf", "leaf_proof"});
      leaves.push_back({e.hex("step_leaf"), e.hex("leaf_proof")});
    } else {
      const json wrapped = {{"claim", list[j]}};
      digests.push_back(Fields(wrapped, where).digest("claim"));
    }
  }
  if (!digests.empty() && !leaves.empty())
    fail(Status::kInvalidArgument, "{}: digests and step leaves mixed", f.path("claims"));
  return progress_json(l, l.claim_dispute(caller, id, digests, leaves, now));
}

json settle_dispute(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "now", "dispute_id"});
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("dispute_id");
  // Settling ends the dispute (refused otherwise): its record.
  return progress_json(l, l.settle_dispute(id, now));
}

json commit_trace(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "dispute_id", "size", "root", "post_node", "post_proof"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("dispute_id");
  const uint64_t size = f.u64("size");
  const Digest root = f.digest("root");
  const Bytes post_node = f.hex("post_node");
  const Bytes post_proof = f.hex("post_proof");
  return progress_json(l, l.commit_trace(caller, id, size, root, post_node, post_proof, now));
}

json open_node(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "dispute_id", "opening"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("dispute_id");
  const Bytes opening = f.hex("opening");
  dispute::OpeningCheck check;
  json out = progress_json(l, l.open_node(caller, id, opening, now, &check));
  out["check"] = opening_check_json(check);
  out["check"]["reason"] = check.reason;
  return out;
}

json rule_dispute(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "caller", "now", "dispute_id", "miner_loses", "challenger_loses", "rule"});
  const Bytes caller = f.hex("caller");
  const uint64_t now = f.u64("now");
  const uint64_t id = f.u64("dispute_id");
  const bool miner_loses = f.boolean("miner_loses");
  const bool challenger_loses = f.boolean("challenger_loses");
  const DisputeRule rule = dispute_rule_from_name(f.str("rule"));
  return progress_json(l, l.rule_dispute(caller, id, miner_loses, challenger_loses, rule, now));
}

// ---- queries ----

json task_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "task_id"});
  const Digest id = f.digest("task_id");
  const task::Task t = l.task_info(id);
  return {{"task_id", id.hex()}, {"task", t.to_json()}, {"program_fault", l.task_program_fault(id)}};
}

json run_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "run_id"});
  const RunInfo r = l.run_info(f.digest("run_id"));
  // A closed run keeps its key, its slashable flag and its final root.
  const bool kept_sealed = !r.closed && r.sealed;
  return {{"run_id", r.run_id.hex()},
          {"task_id", r.task_id.hex()},
          {"miner_identity", to_hex(r.miner_identity)},
          {"declared_steps", r.declared_steps},
          {"latest_size", r.latest_size},
          {"latest_root", or_null(r.latest_size > 0, r.latest_root.hex())},
          {"sealed", r.sealed},
          {"seal_height", or_null(kept_sealed, r.seal_height)},
          {"draw_height", or_null(kept_sealed, r.draw_height)},
          {"drawn_from", r.drawn_from ? randomness_json(*r.drawn_from) : json(nullptr)},
          {"flagged_steps", r.flagged_steps},
          {"final_state", r.final_state ? json(r.final_state->hex()) : json(nullptr)},
          {"slashable", r.slashable},
          {"closed", r.closed}};
}

json challenge_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "challenge_id"});
  const ChallengeInfo c = l.challenge_info(f.u64("challenge_id"));
  json committee = json::array();
  for (const MemberInfo &m : c.committee)
    committee.push_back(
        {{"identity", to_hex(m.identity)}, {"stake", m.stake}, {"committed", m.committed}, {"revealed", m.revealed}});
  json excluded = json::array();
  for (const Bytes &b : c.excluded) excluded.push_back(to_hex(b));
  json out = {{"challenge_id", c.id},
              {"run_id", c.run_id.hex()},
              {"step", c.step},
              {"mode", mode_name(c.mode)},
              {"issued_height", c.issued_height},
              {"opening_deadline", c.opening_deadline},
              {"opened", c.opened},
              {"opened_height", or_null(c.opened, c.opened_height)},
              {"commit_deadline", or_null(c.opened, c.commit_deadline)},
              {"reveal_deadline", or_null(c.opened, c.reveal_deadline)},
              {"manifest_digest", or_null(c.opened, c.manifest_digest.hex())},
              {"opened_state", or_null(c.opened, c.opened_state.hex())},
              {"opened_update_norm", or_null(c.opened, c.opened_update_norm)},
              {"committed_bucket", c.committed_bucket ? json(*c.committed_bucket) : json(nullptr)},
              {"committee", std::move(committee)},
              {"committee_stake", c.committee_stake},
              {"attempt", c.attempt},
              {"awaiting_redraw_from", c.awaiting_redraw_from ? json(*c.awaiting_redraw_from) : json(nullptr)},
              {"redrawn_from", c.redrawn_from ? randomness_json(*c.redrawn_from) : json(nullptr)},
              {"excluded", std::move(excluded)},
              {"witness_commits", c.witness_commits},
              {"witness_reveals", c.witness_reveals},
              {"final", c.verdict.has_value()}};
  if (c.verdict) {
    out.update(verdict_json(*c.verdict));
  } else {
    // Every key a verdict has, null until final.
    const json keys = verdict_json(ChallengeVerdict{});
    for (const auto &[key, value] : keys.items()) out[key] = nullptr;
  }
  return out;
}

json verifier_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "identity"});
  const VerifierInfo v = l.verifier_info(f.hex("identity"));
  return {{"identity", to_hex(v.identity)}, {"stake", v.stake}, {"registered_height", v.registered_height}};
}

json account_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "identity"});
  const Bytes identity = f.hex("identity");
  const bond::Balance b = l.account_info(identity);
  return {{"identity", to_hex(identity)}, {"free", b.free}, {"locked", b.locked}};
}

json dispute_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call", "dispute_id"});
  return dispute_json(l.dispute_info(f.u64("dispute_id")));
}

json ledger_info(Ledger &l, const Fields &f, const json &) {
  f.only({"call"});
  const LedgerSummary s = l.summary();
  return {{"config", l.config().to_json()},
          {"height", l.height()},
          {"verifiers", s.verifiers},
          {"total_stake", s.total_stake},
          {"latest_randomness", s.latest_randomness ? randomness_json(*s.latest_randomness) : json(nullptr)},
          {"outcome_count", l.outcome_count()},
          {"outcome_root", l.outcome_root().hex()},
          {"tasks", s.tasks},
          {"open_runs", s.open_runs},
          {"closed_runs", s.closed_runs},
          {"kept_challenges", s.kept_challenges},  // open, or final with their run still open
          {"open_disputes", s.open_disputes},
          {"held", s.held},
          {"burned", s.burned}};
}

struct Call {
  std::string_view name;
  json (*handle)(Ledger &, const Fields &, const json &);
};

// Every call of docs/ledger.md's JSON interface, in its order.
constexpr std::array kCalls{
    Call{"post_task", post_task},
    Call{"start_training_commitment", start_training_commitment},
    Call{"post_checkpoint_root", post_checkpoint_root},
    Call{"post_randomness", post_randomness},
    Call{"register_verifier", register_verifier},
    Call{"deposit", deposit},
    Call{"withdraw", withdraw},
    Call{"issue_challenge", issue_challenge},
    Call{"submit_opening", submit_opening},
    Call{"commit_witness", commit_witness},
    Call{"reveal_witness_value", reveal_witness_value},
    Call{"finalize_challenge", finalize_challenge},
    Call{"redraw_committee", redraw_committee},
    Call{"prune_task", prune_task},
    Call{"open_dispute", open_dispute},
    Call{"claim_dispute", claim_dispute},
    Call{"settle_dispute", settle_dispute},
    Call{"commit_trace", commit_trace},
    Call{"open_node", open_node},
    Call{"rule_dispute", rule_dispute},
    Call{"dispute_info", dispute_info},
    Call{"task_info", task_info},
    Call{"run_info", run_info},
    Call{"challenge_info", challenge_info},
    Call{"verifier_info", verifier_info},
    Call{"account_info", account_info},
    Call{"ledger_info", ledger_info},
};

}  // namespace

LedgerConfig LedgerConfig::from_json(const json &j) {
  const Fields f(j, "ledger config");
  f.only({"draw_delay", "opening_window", "commit_window", "reveal_window", "max_committee_size", "min_stake",
          "max_rounds", "max_attempts", "dispute_window", "dispute_arity", "referee", "task_bond", "miner_bond",
          "dispute_bond", "max_task_blocks", "max_open_tasks", "miner_grace"});
  constexpr std::array kBondKeys{"task_bond", "miner_bond", "dispute_bond", "max_task_blocks", "max_open_tasks",
                                 "miner_grace"};
  if (std::ranges::none_of(kBondKeys, [&](const char *k) { return f.has(k); }))
    fail(Status::kInvalidArgument,
         "ledger config: no task_bond, miner_bond, dispute_bond, max_task_blocks, max_open_tasks or miner_grace: "
         "a config of pot 0.2, whose ledger held no bonds; since pot 0.3 a ledger needs all six (docs/ledger.md 2.18)");
  LedgerConfig c;
  c.draw_delay = f.u64("draw_delay");
  c.opening_window = f.u64("opening_window");
  c.commit_window = f.u64("commit_window");
  c.reveal_window = f.u64("reveal_window");
  c.max_committee_size = f.u32("max_committee_size");
  c.min_stake = f.u64("min_stake");
  c.max_rounds = f.u32("max_rounds");
  c.max_attempts = f.u32("max_attempts");
  c.dispute_window = f.u64("dispute_window");
  c.dispute_arity = f.u32("dispute_arity");
  c.task_bond = f.u64("task_bond");
  c.miner_bond = f.u64("miner_bond");
  c.dispute_bond = f.u64("dispute_bond");
  c.max_task_blocks = f.u64("max_task_blocks");
  c.max_open_tasks = f.u32("max_open_tasks");
  c.miner_grace = f.u64("miner_grace");
  if (f.has("referee")) {
    c.referee = f.hex("referee");
    if (c.referee.empty())
      fail(Status::kInvalidArgument, "{}: an empty referee (leave the key out for none)", f.path("referee"));
  }
  c.validate();
  return c;
}

json LedgerConfig::to_json() const {
  json j = {{"draw_delay", draw_delay},         {"opening_window", opening_window},
            {"commit_window", commit_window},   {"reveal_window", reveal_window},
            {"max_committee_size", max_committee_size}, {"min_stake", min_stake},
            {"max_rounds", max_rounds},         {"max_attempts", max_attempts},
            {"dispute_window", dispute_window}, {"dispute_arity", dispute_arity},
            {"task_bond", task_bond},           {"miner_bond", miner_bond},
            {"dispute_bond", dispute_bond},     {"max_task_blocks", max_task_blocks},
            {"max_open_tasks", max_open_tasks}, {"miner_grace", miner_grace}};
  if (!referee.empty()) j["referee"] = to_hex(referee);
  return j;
}

json Ledger::apply(const json &call) {
  const std::string name = Fields(call, "call").str("call");
  for (const Call &c : kCalls) {
    if (c.name != name) continue;
    json out = {{"ok", true}};
    out.update(c.handle(*this, Fields(call, name), call));
    return out;
  }
  fail(Status::kInvalidArgument, "call: unknown call \"{}\"", name);
}

}  // namespace pot::game
