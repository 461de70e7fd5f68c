// C entry points for a step's inputs (pot_step_input): what the replay,
// trace, opening and referee calls of capi_replay.cpp take. Built without
// LibTorch too: building the input is protocol work (decoding the schedule
// entry, parsing the samples), only replaying it needs LibTorch.
#include "capi/firewall.h"
#include "capi/handles.h"

using namespace pot;
using namespace pot::capi;

extern "C" {

pot_status pot_step_input_new(pot_step_input **out, const pot_digest *run_id, const char *pre_state_path,
                              const uint8_t *schedule_entry, size_t schedule_entry_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto in = std::make_unique<pot_step_input>();
    if (run_id) in->run = to_digest(run_id, "run_id");
    in->pre_state_path = std::string(str_arg(pre_state_path, "pre_state_path"));
    in->entry = commit::ScheduleEntry::decode(bytes_arg(schedule_entry, schedule_entry_len, "schedule_entry"));
    in->indices = in->entry.indices();
    in->samples.reserve(in->indices.size());
    *out = in.release();
  });
}

void pot_step_input_free(pot_step_input *input) { delete input; }

pot_status pot_step_input_add_sample(pot_step_input *input, const uint8_t *sample, size_t sample_len,
                                     pot_error **err) {
  return guard(err, [&] {
    need(input, "input");
    const std::vector<uint64_t> &indices = input->indices;
    const size_t i = input->samples.size();
    if (i >= indices.size())
      fail(Status::kOutOfRange, "the schedule entry of step {} lists {} samples, all of them added",
           input->entry.step, indices.size());
    try {
      input->samples.push_back(hash::SafetensorsFile::from_bytes(bytes_arg(sample, sample_len, "sample")));
    } catch (const Error &e) {
      fail(e.status(), "sample {} (dataset index {}): {}", i, indices[i], e.what());
    }
  });
}

size_t pot_step_input_sample_count(const pot_step_input *input) { return input ? input->samples.size() : 0; }

uint64_t pot_step_input_step(const pot_step_input *input) { return input ? input->entry.step : 0; }

}  // extern "C"
