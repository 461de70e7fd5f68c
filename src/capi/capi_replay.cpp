// C entry points for the replay layer. Built in every configuration: without
// LibTorch the replay calls return POT_E_UNSUPPORTED, so the ABI is the same.
// With LibTorch they are compiled twice: into the static libpot, and into
// the replay module that the shared libpot loads on first use
// (replay_module.h).
#include "capi/firewall.h"
#include "capi/handles.h"
#include "commit/dataset.h"
#include "spec/spec.h"
#include "dispute/op_referee.h"
#include "merkle/proof.h"
#include "statecheck/state_flags.h"

#if POT_WITH_TORCH
#include "replay/checkpoints.h"
#include "replay/referee_backend.h"
#include "replay/hardware_probe.h"
#include "replay/replay.h"
#include "replay/verify.h"
#include "witness/statement.h"
#endif

using namespace pot;
using namespace pot::capi;

static_assert(POT_VERIFY_BITWISE == 1 && POT_VERIFY_NORM_BUCKET == 2);

#if POT_WITH_TORCH
struct pot_replay {
  spec::ExecutionSpec spec;
  std::unique_ptr<replay::Program> program;
};
struct pot_recorder {
  std::unique_ptr<replay::Recorder> r;
};
struct pot_checkpoints {
  std::unique_ptr<replay::CheckpointStore> s;
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

pot_gradient_trace trace_of(const witness::GradientTrace &t, uint64_t step) {
  pot_gradient_trace out{};
  out.learning_rate = t.learning_rate;
  out.param_elements = t.param_elements;
  out.moved_elements = t.moved_elements;
  out.gradient_elements = t.gradient_elements;
  out.optim_elements = t.optim_elements;
  out.optim_gradient_elements = t.optim_gradient_elements;
  out.ignored = witness::gradient_ignored(t, step) ? 1 : 0;
  return out;
}

}  // namespace
#else
struct pot_replay {};
struct pot_recorder {};
struct pot_checkpoints {};

namespace {
[[noreturn]] void no_torch() {
  fail(Status::kUnsupported, "this libpot was built without LibTorch (POT_WITH_TORCH=OFF): replay is unavailable");
}
}  // namespace
#endif

extern "C" {

// The shared libpot built with LibTorch answers this itself (whether its
// module loads, capi_replay_forward.cpp).
int pot_replay_available(void) { return POT_WITH_TORCH ? 1 : 0; }

pot_status pot_replay_hardware_class(const char **out, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
#if POT_WITH_TORCH
    *out = torch_call([] { return replay::hardware_class().c_str(); });
#else
    no_torch();
#endif
  });
}

// Static storage, like the hardware class above (the same shape: a
// LibTorch-only string).
pot_status pot_replay_framework_version(const char **out, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
#if POT_WITH_TORCH
    *out = replay::framework_version().c_str();
#else
    no_torch();
#endif
  });
}

pot_status pot_replay_new(pot_replay **out, const pot_spec *spec, const char *program_path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(spec, "spec");
    const std::string path(str_arg(program_path, "program_path"));
#if POT_WITH_TORCH
    auto r = std::make_unique<pot_replay>();
    r->spec = spec->spec;
    r->program = torch_call([&] { return replay::Program::load(path, spec->spec); });
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

#if POT_WITH_TORCH
namespace {

// A step's inputs (pot_step_input) loaded for a replay: what
// pot_replay_step, pot_replay_trace and the dispute calls share.
struct PreparedStep {
  const pot_step_input &in;
  replay::Batch batch;
  replay::TensorMap pre;

  const commit::ScheduleEntry &entry() const { return in.entry; }
};

std::unique_ptr<PreparedStep> prepare(pot_replay *replay, const pot_step_input *input) {
  need(replay, "replay");
  const pot_step_input &in = *need(input, "input");
  const size_t scheduled = in.indices.size();
  if (in.samples.size() != scheduled)
    fail(Status::kInvalidArgument, "the step input holds {} samples, the schedule entry of step {} lists {}",
         in.samples.size(), in.entry.step, scheduled);
  auto p = std::make_unique<PreparedStep>(PreparedStep{in, {}, {}});
  p->batch = replay::split_batch(in.entry, in.samples);
  const auto pre_file = hash::SafetensorsFile::open(in.pre_state_path);
  p->pre = torch_call([&] { return replay::load_state(*pre_file); });
  return p;
}

replay::StepResult replay_one(pot_replay *replay, const PreparedStep &p, replay::OpTraceOut *op_trace) {
  return torch_call([&] {
    replay::StepOptions opts;
    opts.run_id = p.in.run;
    opts.op_trace = op_trace;
    return replay::replay_step(*replay->program, replay->spec, p.entry().step, p.pre, p.batch, opts);
  });
}

pot_replay_result result_of(const replay::StepResult &r, uint64_t step) {
  pot_replay_result res{};
  res.struct_size = sizeof res;
  std::memcpy(res.post_state_digest.bytes, r.post_digest.bytes.data(), POT_DIGEST_SIZE);
  res.loss = r.loss;
  res.update_norm = r.update_norm;
  res.norm_bucket = r.norm_bucket;
  res.gradient = trace_of(r.gradient, step);
  from_digest(&res.gradient_digest, r.gradient_digest);
  return res;
}

}  // namespace
#endif

pot_status pot_replay_step(pot_replay_result *out, pot_replay *replay, const pot_step_input *input,
                           const char *post_state_path, pot_error **err) {
  return guard(err, [&] {
    result_arg(out, "out", "pot_replay_result", "POT_REPLAY_RESULT_INIT");
#if POT_WITH_TORCH
    const auto p = prepare(replay, input);
    const replay::StepResult r = replay_one(replay, *p, nullptr);
    if (post_state_path) {
      const std::string post_path(str_arg(post_state_path, "post_state_path"));
      hash::write_safetensors(post_path, replay::state_views(r.post), {});
    }
    write_result(out, result_of(r, p->entry().step));
#else
    (void)replay, (void)input, (void)post_state_path;
    no_torch();
#endif
  });
}

pot_status pot_replay_trace(pot_op_trace **out, pot_replay *replay, const pot_step_input *input, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
#if POT_WITH_TORCH
    const auto p = prepare(replay, input);
    replay::OpTraceOut nodes;
    const replay::StepResult r = replay_one(replay, *p, &nodes);
    auto t = std::make_unique<pot_op_trace>();
    t->trace = std::make_unique<dispute::OpTrace>(nodes.nodes);
    t->result = result_of(r, p->entry().step);
    *out = t.release();
#else
    (void)replay, (void)input;
    no_torch();
#endif
  });
}

pot_status pot_replay_open_op_node(pot_bytes *out, pot_replay *replay, const pot_step_input *input, uint64_t index,
                                   pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
#if POT_WITH_TORCH
    const auto p = prepare(replay, input);
    const replay::StepInputs in{*replay->program, replay->spec, p->entry().step, p->pre, p->batch, p->in.run};
    to_bytes(out, torch_call([&] { return replay::open_op_node(in, index); }).encode());
#else
    (void)replay, (void)input, (void)index;
    no_torch();
#endif
  });
}

pot_status pot_referee_decide_op(pot_bytes *ruling, pot_replay *replay, const pot_step_input *input,
                                 const pot_digest *pre_state_digest, uint64_t index, const pot_digest *agreed_root,
                                 const pot_digest *a_root, const pot_digest *b_root, const uint8_t *a_opening,
                                 size_t a_opening_len, const uint8_t *b_opening, size_t b_opening_len,
                                 pot_error **err) {
  return guard(err, [&] {
    need(ruling, "ruling");
    dispute::OperatorDispute d;
    d.index = index;
    d.agreed_root = to_digest(agreed_root, "agreed_root");
    d.a_root = to_digest(a_root, "a_root");
    d.b_root = to_digest(b_root, "b_root");
    d.pre_state = to_digest(pre_state_digest, "pre_state_digest");
    // Openings are the parties' words: a malformed one loses, it is not an error.
    std::optional<dispute::NodeOpening> a, b;
    std::string a_bad, b_bad;
    try {
      a = dispute::NodeOpening::decode(bytes_arg(a_opening, a_opening_len, "a_opening"));
    } catch (const Error &e) {
      a_bad = e.what();
    }
    try {
      b = dispute::NodeOpening::decode(bytes_arg(b_opening, b_opening_len, "b_opening"));
    } catch (const Error &e) {
      b_bad = e.what();
    }
#if POT_WITH_TORCH
    const auto p = prepare(replay, input);
    // Only the referee checks the pre-state against an agreed digest; the
    // replays that share prepare() do not pay for it.
    const hash::Digest pre_digest = replay::state_digest(p->pre, 0);
    if (pre_digest != d.pre_state)
      fail(Status::kProofMismatch, "the pre-state file's digest is {}, not the agreed S_{} {}", pre_digest.hex(),
           p->entry().step - 1, d.pre_state.hex());
    if (d.a_root == d.b_root)
      fail(Status::kInvalidArgument, "both parties claim root {}: nothing is disputed", d.a_root.hex());
    dispute::Ruling r;
    if (!a || !b) {
      r.rule = "opening";
      r.a_loses = !a;
      r.b_loses = !b;
      r.reason = fmt::format("{}{}{}", a ? "" : "party A's opening: " + a_bad, !a && !b ? "; " : "",
                             b ? "" : "party B's opening: " + b_bad);
    } else {
      const replay::StepInputs in{*replay->program, replay->spec, p->entry().step, p->pre, p->batch, p->in.run};
      replay::StepReferee referee(in);
      r = torch_call([&] { return dispute::decide_operator(d, *a, *b, referee); });
    }
    const std::string j = dispute::ruling_json(r);
    to_bytes(ruling, Bytes(j.begin(), j.end()));
#else
    (void)replay, (void)input;
    no_torch();
#endif
  });
}

pot_status pot_verify_step(pot_verify_result *out, const pot_commitment *commitment, const pot_spec *spec,
                           const char *program_path, uint64_t challenged_step, uint64_t log_size,
                           const pot_digest *log_root, const uint8_t *manifest, size_t manifest_len,
                           const char *pre_state_path, const char *post_state_path, pot_verify_mode mode,
                           uint32_t intra_op_threads, pot_error **err) {
  pot_verify_result res{};
  Status failed = Status::kOk;
  std::string message;
  const pot_status s = guard(err, [&] {
    result_arg(out, "out", "pot_verify_result", "POT_VERIFY_RESULT_INIT");
    need(commitment, "commitment");
    need(spec, "spec");
    const int m = enum_arg(mode);
    if (m != POT_VERIFY_BITWISE && m != POT_VERIFY_NORM_BUCKET)
      fail(Status::kInvalidArgument, "mode: {} is not a pot_verify_mode", m);
#if POT_WITH_TORCH
    replay::VerifyInputs in;
    in.commitment = &commitment->c;
    in.sealed_flags = commitment->sealed_flags;
    in.spec = &spec->spec;
    in.program_path = std::string(str_arg(program_path, "program_path"));
    in.challenged_step = challenged_step;
    in.log_size = log_size;
    in.log_root = to_digest(log_root, "log_root");
    in.manifest = bytes_arg(manifest, manifest_len, "manifest");
    in.pre_state_path = std::string(str_arg(pre_state_path, "pre_state_path"));
    if (post_state_path) in.post_state_path = std::string(str_arg(post_state_path, "post_state_path"));
    in.mode = static_cast<replay::VerifyMode>(m);
    in.intra_op_threads = intra_op_threads;
    const replay::VerifyResult r = torch_call([&] { return replay::verify_step(in); });
    res.check = static_cast<pot_opening_check>(r.check);
    res.replayed = r.replayed ? 1 : 0;
    from_digest(&res.replayed_state_digest, r.replayed_state_digest);
    res.loss = r.loss;
    res.update_norm = r.update_norm;
    res.norm_bucket = r.norm_bucket;
    from_digest(&res.committed_state_digest, r.committed_state_digest);
    res.committed_loss = r.committed_loss;
    res.committed_update_norm = r.committed_update_norm;
    res.committed_norm_bucket = r.committed_norm_bucket;
    if (r.replayed) {
      res.gradient = trace_of(r.gradient, challenged_step);
      from_digest(&res.gradient_digest, r.gradient_digest);
    }
    res.loss_error = r.loss_error;
    res.update_error = r.update_error;
    res.tensor_update_error = r.tensor_update_error;
    failed = r.status;
    message = r.message;
#else
    (void)program_path; (void)challenged_step; (void)log_size; (void)log_root; (void)manifest; (void)manifest_len;
    (void)pre_state_path; (void)post_state_path; (void)intra_op_threads;
    no_torch();
#endif
  });
  if (s != POT_OK) return s;
  write_result(out, res);
  if (failed == Status::kOk) return POT_OK;
  return set_error(err, static_cast<pot_status>(failed), message.c_str());
}

pot_status pot_witness_statement(pot_bytes *out, const pot_verify_result *result, const pot_spec *spec,
                                 const pot_digest *run_id, uint64_t step, uint64_t challenge_id, pot_verify_mode mode,
                                 uint32_t intra_op_threads, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    result_arg(result, "result", "pot_verify_result", "POT_VERIFY_RESULT_INIT");
    need(spec, "spec");
    const int m = enum_arg(mode);
    if (m != POT_VERIFY_BITWISE && m != POT_VERIFY_NORM_BUCKET)
      fail(Status::kInvalidArgument, "mode: {} is not a pot_verify_mode", m);
    const int check = enum_arg(result->check);
    if (check < 0 || check > POT_CHECK_STATE_STATS)
      fail(Status::kInvalidArgument, "result.check: {} is not a pot_opening_check", check);
#if POT_WITH_TORCH
    const witness::Environment env{replay::framework_version(),
                                   intra_op_threads ? intra_op_threads : spec->spec.intra_op_threads,
                                   torch_call([] { return replay::hardware_class(); })};
    witness::Statement st;
    st.run_id = to_digest(run_id, "run_id");
    st.step = step;
    st.challenge_id = challenge_id;
    st.mode = static_cast<witness::Mode>(m);
    st.finding = witness::finding_of(static_cast<commit::OpeningCheck>(check), result->replayed != 0,
                                     to_digest(&result->replayed_state_digest, "result"), result->norm_bucket,
                                     to_digest(&result->gradient_digest, "result"), env);
    st.validate();
    to_text(out, st.to_json().dump());
#else
    (void)run_id; (void)step; (void)challenge_id; (void)intra_op_threads;
    no_torch();
#endif
  });
}

#if POT_WITH_TORCH
#define POT_TORCH_ONLY(...) __VA_ARGS__
#else
#define POT_TORCH_ONLY(...) no_torch()
#endif

pot_status pot_recorder_new(pot_recorder **out, const char *dir, const pot_spec *spec, const char *program_path,
                            uint64_t checkpoint_every, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(spec, "spec");
    const std::string d(str_arg(dir, "dir")), p(str_arg(program_path, "program_path"));
    (void)checkpoint_every;
    POT_TORCH_ONLY(*out = new pot_recorder{replay::Recorder::create(d, spec->spec, p, checkpoint_every)});
  });
}

pot_status pot_recorder_resume(pot_recorder **out, uint64_t *step, pot_bytes *state_path, const char *dir,
                               pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(step, "step");
    need(state_path, "state_path");
    const std::string d(str_arg(dir, "dir"));
#if POT_WITH_TORCH
    auto r = replay::Recorder::resume(d);
    to_text(state_path, r->resumed_state_path());
    *step = r->resumed_step();
    *out = new pot_recorder{std::move(r)};
#else
    no_torch();
#endif
  });
}

void pot_recorder_free(pot_recorder *recorder) { delete recorder; }

pot_status pot_recorder_start(pot_digest *initial_state_digest, pot_recorder *recorder,
                              const pot_safetensors_writer *s0, pot_error **err) {
  return guard(err, [&] {
    need(initial_state_digest, "initial_state_digest");
    need(recorder, "recorder");
    need(s0, "s0");
    POT_TORCH_ONLY(from_digest(initial_state_digest, recorder->r->start(s0->tensors)));
  });
}

pot_status pot_recorder_set_commitment(pot_recorder *recorder, const pot_commitment *commitment,
                                       const uint8_t *const *entries, const size_t *entries_lens, size_t entries_len,
                                       pot_error **err) {
  return guard(err, [&] {
    need(recorder, "recorder");
    need(commitment, "commitment");
    if (entries_len > 0) {
      need(entries, "entries");
      need(entries_lens, "entries_lens");
    }
    std::vector<Bytes> schedule;
    schedule.reserve(entries_len);
    for (size_t i = 0; i < entries_len; ++i) {
      const ByteView e = bytes_arg(entries[i], entries_lens[i], "entries[i]");
      schedule.emplace_back(e.begin(), e.end());
    }
    POT_TORCH_ONLY(recorder->r->set_commitment(commitment->c, schedule));
  });
}

pot_status pot_recorder_begin_step(uint64_t *seed, pot_recorder *recorder, uint64_t step, pot_error **err) {
  return guard(err, [&] {
    need(seed, "seed");
    need(recorder, "recorder");
    (void)step;
    POT_TORCH_ONLY(*seed = torch_call([&] { return recorder->r->begin_step(step); }));
  });
}

pot_status pot_recorder_end_step(pot_digest *state_digest, pot_recorder *recorder,
                                 const pot_safetensors_writer *state, double loss, pot_error **err) {
  return guard(err, [&] {
    need(recorder, "recorder");
    need(state, "state");
    (void)loss;
#if POT_WITH_TORCH
    const commit::StepLeaf leaf = recorder->r->end_step(state->tensors, loss);
    if (state_digest) from_digest(state_digest, leaf.state_digest);
#else
    (void)state_digest;
    no_torch();
#endif
  });
}

uint64_t pot_recorder_size(const pot_recorder *recorder) {
#if POT_WITH_TORCH
  return recorder && recorder->r ? recorder->r->size() : 0;
#else
  (void)recorder;
  return 0;
#endif
}

pot_status pot_recorder_root(pot_digest *out, const pot_recorder *recorder, uint64_t size, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(recorder, "recorder");
    (void)size;
    POT_TORCH_ONLY(from_digest(out, recorder->r->root(size)));
  });
}

pot_status pot_recorder_consistency_proof(pot_bytes *out, const pot_recorder *recorder, uint64_t size1,
                                          uint64_t size2, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(recorder, "recorder");
    (void)size1;
    (void)size2;
    POT_TORCH_ONLY(to_bytes(out, merkle::encode_proof(recorder->r->consistency_proof(size1, size2))));
  });
}

pot_status pot_recorder_finish(pot_digest *root, pot_recorder *recorder, pot_error **err) {
  return guard(err, [&] {
    need(root, "root");
    need(recorder, "recorder");
    POT_TORCH_ONLY(from_digest(root, recorder->r->finish()));
  });
}

pot_status pot_checkpoints_open(pot_checkpoints **out, const char *dir, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const std::string d(str_arg(dir, "dir"));
    POT_TORCH_ONLY(*out = new pot_checkpoints{replay::CheckpointStore::open(d)});
  });
}

void pot_checkpoints_free(pot_checkpoints *checkpoints) { delete checkpoints; }

uint64_t pot_checkpoints_size(const pot_checkpoints *checkpoints) {
#if POT_WITH_TORCH
  return checkpoints && checkpoints->s ? checkpoints->s->size() : 0;
#else
  (void)checkpoints;
  return 0;
#endif
}

pot_status pot_checkpoints_state_path(pot_bytes *out, uint64_t *replayed, pot_checkpoints *checkpoints, uint64_t step,
                                      const char *dataset_dir, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(checkpoints, "checkpoints");
    const std::string d(str_arg(dataset_dir, "dataset_dir"));
    (void)step;
    (void)replayed;
#if POT_WITH_TORCH
    uint64_t n = 0;
    const std::string path = torch_call([&] { return checkpoints->s->state_path(step, d, &n); });
    Bytes b(path.begin(), path.end());
    b.push_back(0);
    to_bytes(out, b);
    out->len -= 1;
    if (replayed) *replayed = n;
#else
    no_torch();
#endif
  });
}

pot_status pot_checkpoints_leaf(pot_bytes *leaf, pot_bytes *proof, pot_checkpoints *checkpoints, uint64_t step,
                                uint64_t log_size, pot_error **err) {
  return guard(err, [&] {
    need(leaf, "leaf");
    need(proof, "proof");
    need(checkpoints, "checkpoints");
    (void)step;
    (void)log_size;
#if POT_WITH_TORCH
    auto [l, p] = checkpoints->s->leaf(step, log_size);
    to_bytes(proof, p);
    to_bytes(leaf, l);
#else
    no_torch();
#endif
  });
}

pot_status pot_checkpoints_run_flags(pot_bytes *out, pot_checkpoints *checkpoints, uint64_t log_size,
                                     pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(checkpoints, "checkpoints");
    (void)log_size;
#if POT_WITH_TORCH
    to_text(out, statecheck::run_flags_to_json(checkpoints->s->run_flags(log_size)));
#else
    no_torch();
#endif
  });
}

pot_status pot_checkpoints_opening(pot_bytes *out, pot_checkpoints *checkpoints, uint64_t step, uint64_t log_size,
                                   const char *dataset_dir, int serve_post_state, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(checkpoints, "checkpoints");
    const std::string d(str_arg(dataset_dir, "dataset_dir"));
    (void)step;
    (void)log_size;
    (void)serve_post_state;
    POT_TORCH_ONLY(
        to_bytes(out, torch_call([&] { return checkpoints->s->opening(step, log_size, d, serve_post_state != 0); })));
  });
}

}  // extern "C"
