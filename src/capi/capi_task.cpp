// C entry points for tasks (docs/PROTOCOL.md section 17.1).
#include "capi/firewall.h"
#include "capi/handles.h"
#include "task/task.h"

using namespace pot;
using namespace pot::capi;

namespace {
// A miner identity argument, held to the commitment's rule before anything
// is computed from it.
ByteView miner_arg(const uint8_t *p, size_t len) {
  const ByteView miner = bytes_arg(p, len, "miner_identity");
  commit::check_miner_identity(miner);
  return miner;
}
}  // namespace

extern "C" {

pot_status pot_task_from_json(pot_task **out, const char *json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto t = task::Task::from_json(parse_json_arg(json, "json"));
    *out = new pot_task{std::move(t)};
  });
}

pot_status pot_task_decode(pot_task **out, const uint8_t *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto t = task::Task::decode(bytes_arg(data, data_len, "data"));
    *out = new pot_task{std::move(t)};
  });
}

void pot_task_free(pot_task *task) { delete task; }

pot_status pot_task_encode(pot_bytes *out, const pot_task *task, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(task, "task")->task.encode());
  });
}

pot_status pot_task_to_json(pot_bytes *out, const pot_task *task, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_text(out, need(task, "task")->task.to_json().dump());
  });
}

pot_status pot_task_id(pot_digest *out, const pot_task *task, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(task, "task")->task.id());
  });
}

pot_status pot_task_spec(pot_spec **out, const pot_task *task, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto s = need(task, "task")->task.spec;
    *out = new pot_spec{std::move(s)};
  });
}

pot_status pot_task_check_commitment(const pot_task *task, const pot_commitment *commitment, pot_error **err) {
  return guard(err, [&] {
    task::check_commitment(need(task, "task")->task, need(commitment, "commitment")->c);
  });
}

pot_status pot_task_schedule_rule(pot_schedule_rule *out, const pot_task *task, pot_error **err) {
  return guard(err, [&] {
    *need(out, "out") = static_cast<pot_schedule_rule>(need(task, "task")->task.schedule_rule);
  });
}

pot_status pot_task_run_schedule_seed(uint64_t *out, const pot_task *task, const uint8_t *miner_identity,
                                      size_t miner_identity_len, uint64_t declared_steps, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const task::Task &t = need(task, "task")->task;
    const ByteView miner = miner_arg(miner_identity, miner_identity_len);
    if (t.schedule_rule == task::ScheduleRule::kListed)
      fail(Status::kInvalidArgument, "task {} has a listed schedule: every run follows its listed root",
           t.id().hex());
    const hash::Digest id = t.id();
    task::check_steps(t, id, declared_steps);
    *out = task::run_schedule_seed(id, miner, declared_steps);
  });
}

pot_status pot_task_commitment(pot_commitment **out, const pot_task *task, const uint8_t *miner_identity,
                               size_t miner_identity_len, uint64_t declared_steps, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const task::Task &t = need(task, "task")->task;
    commit::TrainingCommitment c =
        task::commitment_for(t, miner_arg(miner_identity, miner_identity_len), declared_steps);
    c.validate();
    // Built from the task, so it matches it; the check stays as a guard but
    // does not redo the run-seeded schedule (up to 2^24 draws) just built.
    task::check_commitment(t, c, /*recompute_run_schedule=*/false);
    *out = new pot_commitment{std::move(c)};
  });
}

}  // extern "C"
