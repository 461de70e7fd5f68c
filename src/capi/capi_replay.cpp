// C entry points for the replay layer. Built in every configuration: without
// LibTorch the replay calls return POT_E_UNSUPPORTED, so the ABI is the same.
#include "capi/firewall.h"
#include "capi/handles.h"
#include "commit/dataset.h"
#include "commit/spec.h"

#if POT_WITH_TORCH
#include "replay/replay.h"
#endif

using namespace pot;
using namespace pot::capi;

#if POT_WITH_TORCH
struct pot_replay {
  commit::ExecutionSpec spec;
  std::unique_ptr<replay::Program> program;
};

namespace {

// LibTorch reports failures as c10::Error: they become POT_E_BACKEND.
template <typename F>
auto torch_call(F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error &e) {
    fail(Status::kBackend, "LibTorch: {}", e.what_without_backtrace());
  }
}

}  // namespace
#else
struct pot_replay {};

namespace {
[[noreturn]] void no_torch() {
  fail(Status::kUnsupported, "this libpot was built without LibTorch (POT_WITH_TORCH=OFF): replay is unavailable");
}
}  // namespace
#endif

extern "C" {

pot_status pot_program_digest_file(pot_digest *out, const char *path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const hash::Digest d = commit::program_digest_file(std::string(str_arg(path, "path")));
    std::memcpy(out->bytes, d.bytes.data(), d.bytes.size());
  });
}

int pot_replay_available(void) { return POT_WITH_TORCH ? 1 : 0; }

pot_status pot_replay_new(pot_replay **out, const pot_spec *spec, const char *program_path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(spec, "spec");
    const std::string path(str_arg(program_path, "program_path"));
#if POT_WITH_TORCH
    auto r = std::make_unique<pot_replay>();
    r->spec = spec->spec;
    r->program = torch_call([&] { return replay::Program::load(path, spec->spec.model_program_digest); });
    *out = r.release();
#else
    no_torch();
#endif
  });
}

void pot_replay_free(pot_replay *replay) { delete replay; }

pot_status pot_replay_input_name(const char **name, const pot_replay *replay, size_t index, pot_error **err) {
  return guard(err, [&] {
    need(name, "name");
    need(replay, "replay");
#if POT_WITH_TORCH
    const auto &inputs = replay->program->inputs();
    if (index >= inputs.size())
      fail(Status::kOutOfRange, "input {} of a forward that takes {}", index, inputs.size());
    *name = inputs[index].c_str();
#else
    (void)index;
    no_torch();
#endif
  });
}

pot_status pot_replay_step(pot_replay_result *out, pot_replay *replay, const char *pre_state_path,
                           const uint8_t *schedule_entry, size_t entry_len, const uint8_t *const *samples,
                           const size_t *sample_lens, size_t n_samples, double next_lr,
                           const char *post_state_path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(replay, "replay");
    const std::string pre_path(str_arg(pre_state_path, "pre_state_path"));
    const commit::ScheduleEntry entry =
        commit::ScheduleEntry::decode(bytes_arg(schedule_entry, entry_len, "schedule_entry"));
    if (n_samples > 0) {
      need(samples, "samples");
      need(sample_lens, "sample_lens");
    }
    const size_t scheduled = entry.indices().size();
    if (n_samples != scheduled)
      fail(Status::kInvalidArgument, "{} samples given, the schedule entry of step {} lists {}", n_samples,
           entry.step, scheduled);
#if POT_WITH_TORCH
    std::vector<std::unique_ptr<hash::SafetensorsFile>> files;
    files.reserve(n_samples);
    for (size_t i = 0; i < n_samples; ++i) {
      try {
        files.push_back(hash::SafetensorsFile::from_bytes(bytes_arg(samples[i], sample_lens[i], "samples[i]")));
      } catch (const Error &e) {
        fail(e.status(), "sample {} (dataset index {}): {}", i, entry.indices()[i], e.what());
      }
    }
    replay::Batch batch;
    size_t k = 0;
    for (const auto &mb : entry.micro) {
      batch.emplace_back();
      for (size_t j = 0; j < mb.size(); ++j) batch.back().push_back(files[k++].get());
    }
    const auto pre_file = hash::SafetensorsFile::open(pre_path);
    replay::StepResult r = torch_call([&] {
      const replay::TensorMap pre = replay::load_state(*pre_file);
      return replay::replay_step(*replay->program, replay->spec, entry.step, pre, batch, next_lr);
    });
    if (post_state_path) {
      const std::string post_path(str_arg(post_state_path, "post_state_path"));
      hash::write_safetensors(post_path, replay::state_views(r.post), {});
    }
    pot_replay_result res;
    std::memcpy(res.post_state_digest.bytes, r.post_digest.bytes.data(), POT_DIGEST_SIZE);
    res.loss = r.loss;
    res.update_norm = r.update_norm;
    res.norm_bucket = r.norm_bucket;
    *out = res;
#else
    (void)next_lr;
    (void)post_state_path;
    no_torch();
#endif
  });
}

}  // extern "C"
