// C entry points for tasks (docs/PROTOCOL.md section 17.1).
#include "capi/firewall.h"
#include "capi/handles.h"
#include "task/task.h"

using namespace pot;
using namespace pot::capi;

extern "C" {

pot_status pot_task_from_json(pot_task **out, const char *json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto t = task::Task::from_json(parse_json_arg(json, "json"));
    *out = new pot_task{std::move(t)};
  });
}

pot_status pot_task_decode(pot_task **out, const uint8_t *data, size_t len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto t = task::Task::decode(bytes_arg(data, len, "data"));
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

}  // extern "C"
