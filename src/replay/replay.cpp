#include "replay/replay.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_set>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/ScalarOps.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/version.h>

#include "repro_aten/gate.h"
#include "spec/seed.h"
#include "common/error.h"
#include "hash/finite.h"
#include "hash/sha256.h"
#include "hash/state.h"
#include "replay/hardware_probe.h"
#include "witness/statement.h"
#include "replay/program_check.h"
#include "replay/program_work.h"
#include "replay/op_recorder.h"
#include "replay/optimizers.h"
#include "replay/torch_util.h"
#include "hash/update_norm.h"
#include "witness/norm_bucket.h"

namespace pot::replay {
namespace {

constexpr uint64_t kMaxProgramBytes = uint64_t{4} << 30;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The tensor a state must hold under `name`, checked against dtype/shape.
const at::Tensor &need(const TensorMap &state, const std::string &name, at::ScalarType dtype,
                       at::IntArrayRef shape) {
  auto it = state.find(name);
  if (it == state.end()) fail(Status::kInvalidArgument, "pre-state: missing tensor '{}'", name);
  if (it->second.scalar_type() != dtype)
    fail(Status::kInvalidArgument, "pre-state: tensor '{}' has dtype {}, the program needs {}", name,
         c10::toString(it->second.scalar_type()), c10::toString(dtype));
  if (it->second.sizes() != shape)
    fail(Status::kInvalidArgument, "pre-state: tensor '{}' has shape {}, the program needs {}", name,
         shape_str(it->second.sizes()), shape_str(shape));
  return it->second;
}

// The elements of two tensors of one dtype and shape whose bit patterns
// differ (+0 and -0 differ; the states are finite here).
uint64_t differing_elements(const at::Tensor &a, const at::Tensor &b) {
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  at::ScalarType as;
  switch (x.element_size()) {
    case 8: as = at::kLong; break;
    case 4: as = at::kInt; break;
    case 2: as = at::kShort; break;
    case 1: as = at::kByte; break;
    default: fail(Status::kInternal, "differing_elements: element size {}", x.element_size());
  }
  return static_cast<uint64_t>(x.view(as).ne(y.view(as)).sum().item<int64_t>());
}

// One parameter's update, applied as the step applies it and a second time
// from the same state with a zero gradient (check 27, docs/PROTOCOL.md
// section 21.5): the difference is what the gradient did.
void traced_update(ParamState &p, const at::Tensor &pre_param, const spec::OptimizerSpec &o, double lr,
                   witness::GradientTrace &trace, OpRecorder *recorder) {
  const at::Tensor grad = p.param.grad();
  ParamState zero{p.name, p.param.detach().clone(), {}, p.group};
  for (const auto &[k, t] : p.optim) zero.optim.emplace(k, t.clone());
  optimizer_update(zero, at::zeros_like(grad), o, lr);
  {
    OpRecording on(recorder);  // the update itself, not check 27's zero-gradient one
    optimizer_update(p, grad, o, lr);
  }
  const uint64_t elements = static_cast<uint64_t>(p.param.numel());
  const uint64_t moved = differing_elements(p.param, pre_param);
  uint64_t traced = differing_elements(p.param, zero.param), optim = 0;
  trace.param_elements += elements;
  trace.moved_elements += moved;
  trace.gradient_elements += traced;
  for (const auto &[k, t] : p.optim) {
    if (is_scalar_key(k)) continue;  // counters and NAdam's mu product: no gradient reaches them
    const uint64_t d = differing_elements(t, zero.optim.at(k));
    optim += static_cast<uint64_t>(t.numel());
    traced += d;
    trace.optim_elements += static_cast<uint64_t>(t.numel());
    trace.optim_gradient_elements += d;
  }
  // The per-tensor rule (witness::gradient_ignored): a tensor the gradient
  // reached (a non-zero element) must keep a trace of it, at a rate above
  // 0, when it moved or keeps optimizer state.
  if (lr > 0 && traced == 0 && (moved > 0 || optim > 0) && elements >= witness::kMinTracedTensorElements &&
      grad.ne(0).any().item<bool>()) {
    if (trace.untraced_tensors++ == 0) {
      trace.first_untraced = std::string(kParamPrefix) + p.name;
      trace.first_untraced_elements = elements;
    }
  }
}

// Stacks the named tensor of every sample of a micro-batch along a new
// dimension 0 (torch.utils.data.default_collate of tensors).
// The program's pot_after_step, after the optimizer update (an EMA of the
// weights into buffers). It may write buffers only: a hook that moved the
// parameters would change the step after check 27 measured the update.
void after_step(Program &program, std::vector<ParamState> &params, OpRecorder *rec) {
  std::vector<int64_t> versions;
  for (const ParamState &p : params) versions.push_back(p.param._version());
  {
    OpRecording on(rec);
    try {
      program.module().get_method(std::string(kAfterStepMethod))(std::vector<c10::IValue>{});
    } catch (const c10::Error &e) {
      fail(Status::kInvalidArgument, "{} failed: {}", kAfterStepMethod, e.what_without_backtrace());
    } catch (const std::exception &e) {
      fail(Status::kInvalidArgument, "{} failed: {}", kAfterStepMethod, e.what());
    }
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].param._version() != versions[i])
      fail(Status::kInvalidArgument, "{} wrote parameter '{}': it may write the program's buffers only",
           kAfterStepMethod, params[i].name);
}

std::vector<c10::IValue> collate(const Program &program, const std::vector<const hash::SafetensorsFile *> &mb,
                                 size_t mb_index) {
  std::vector<c10::IValue> inputs;
  for (const std::string &name : program.inputs()) {
    std::vector<at::Tensor> parts;
    parts.reserve(mb.size());
    for (size_t s = 0; s < mb.size(); ++s) {
      const hash::SafetensorsFile &f = *mb[s];
      const long i = f.find(name);
      if (i < 0)
        fail(Status::kInvalidArgument, "micro-batch {} sample {}: no tensor '{}' (the forward takes {})",
             mb_index + 1, s + 1, name, fmt::join(program.inputs(), ", "));
      parts.push_back(tensor_from_bytes(f.entry(static_cast<size_t>(i)).meta, f.data(static_cast<size_t>(i))));
      if (s > 0 && (parts[s].sizes() != parts[0].sizes() || parts[s].scalar_type() != parts[0].scalar_type()))
        fail(Status::kInvalidArgument,
             "micro-batch {}: tensor '{}' of sample {} is {} {}, sample 1 has {} {}: cannot stack", mb_index + 1,
             name, s + 1, c10::toString(parts[s].scalar_type()), shape_str(parts[s].sizes()),
             c10::toString(parts[0].scalar_type()), shape_str(parts[0].sizes()));
    }
    inputs.emplace_back(at::stack(parts, 0));
  }
  for (size_t s = 0; s < mb.size(); ++s)
    if (mb[s]->size() != program.inputs().size())
      fail(Status::kInvalidArgument, "micro-batch {} sample {}: {} tensors, the forward takes exactly {} ({})",
           mb_index + 1, s + 1, mb[s]->size(), program.inputs().size(), fmt::join(program.inputs(), ", "));
  return inputs;
}

}  // namespace

std::unique_ptr<Program> Program::load(const std::string &path, const spec::ExecutionSpec &spec) {
  const hash::Digest &expected = spec.model_program_digest;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(Status::kIo, "model program '{}': cannot open: {}", path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail(Status::kIo, "model program '{}': cannot read its size", path);
  if (static_cast<uint64_t>(size) > kMaxProgramBytes)
    fail(Status::kLimit, "model program '{}': {} bytes, the limit is {}", path, size, kMaxProgramBytes);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) fail(Status::kIo, "model program '{}': read failed", path);

  std::unique_ptr<Program> p(new Program());
  // Hash and load the same bytes: the file cannot change in between.
  p->digest_ = spec::program_digest(ByteView(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  if (p->digest_ != expected)
    fail(Status::kProofMismatch, "model program '{}': digest {} is not the spec's model_program_digest {}", path,
         p->digest_.hex(), expected.hex());
  // The program is the miner's code: nothing of it runs before it is checked.
  // Every failure from here on is kUnsupported or kInvalidArgument: the
  // task's program refused by a rule (verify_step reports it as check 30).
  check_program_archive(bytes, path);
  try {
    std::istringstream stream(std::move(bytes));
    p->module_ = torch::jit::load(stream, c10::Device(c10::kCPU));
  } catch (const c10::Error &e) {
    fail(Status::kInvalidArgument, "model program '{}' is not a TorchScript module LibTorch can load: {}", path,
         e.what_without_backtrace());
  } catch (const std::exception &e) {
    // torch 2.x's TorchScript parser reports bad code as a plain
    // std::exception (an ErrorReport), not a c10::Error.
    fail(Status::kInvalidArgument, "model program '{}' is not a TorchScript module LibTorch can load: {}", path,
         e.what());
  }
  check_program_operators(p->module_, path);
  check_program_work(p->module_, path);
  auto forward = p->module_.find_method("forward");
  if (!forward) fail(Status::kInvalidArgument, "model program '{}' has no forward method", path);
  const auto &args = forward->function().getSchema().arguments();
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].type()->kind() != c10::TypeKind::TensorType)
      fail(Status::kInvalidArgument, "model program '{}': forward argument '{}' is {}, not a Tensor", path,
           args[i].name(), args[i].type()->str());
    p->inputs_.push_back(args[i].name());
  }
  if (p->inputs_.empty()) fail(Status::kInvalidArgument, "model program '{}': forward takes no tensor", path);
  if (auto after = p->module_.find_method(std::string(kAfterStepMethod))) {
    const c10::FunctionSchema &schema = after->function().getSchema();
    if (schema.arguments().size() != 1 || schema.returns().size() != 1 ||
        schema.returns()[0].type()->kind() != c10::TypeKind::NoneType)
    {
      std::ostringstream shown;
      shown << schema;
      fail(Status::kInvalidArgument, "model program '{}': {} must take no argument besides self and return None, "
           "not {}", path, kAfterStepMethod, shown.str());
    }
    p->has_after_step_ = true;
  }

  std::unordered_set<const void *> seen;
  for (const auto &np : p->module_.named_parameters(/*recurse=*/true)) {
    if (seen.insert(np.value.unsafeGetTensorImpl()).second) p->params_.emplace_back(np.name, np.value);
  }
  for (const auto &nb : p->module_.named_buffers(/*recurse=*/true)) {
    if (seen.insert(nb.value.unsafeGetTensorImpl()).second) p->buffers_.emplace_back(nb.name, nb.value);
  }
  if (p->params_.empty()) fail(Status::kInvalidArgument, "model program '{}' has no parameter to train", path);
  check_program_dropout(p->module_, spec.dropout, path);
  p->checked_dropout_ = spec.dropout;
  return p;
}

Batch split_batch(const commit::ScheduleEntry &entry,
                  const std::vector<std::unique_ptr<hash::SafetensorsFile>> &samples) {
  size_t scheduled = 0;
  for (const auto &mb : entry.micro) scheduled += mb.size();
  if (samples.size() != scheduled)
    fail(Status::kInvalidArgument, "{} samples given, the schedule entry of step {} lists {}", samples.size(),
         entry.step, scheduled);
  Batch batch;
  size_t k = 0;
  for (const auto &mb : entry.micro) {
    batch.emplace_back();
    for (size_t j = 0; j < mb.size(); ++j) batch.back().push_back(samples[k++].get());
  }
  return batch;
}

std::mutex &torch_state_mutex() {
  static std::mutex m;
  return m;
}

TensorMap load_state(const hash::SafetensorsFile &file) {
  TensorMap state;
  for (size_t i = 0; i < file.size(); ++i)
    state.emplace(file.entry(i).meta.name, tensor_from_bytes(file.entry(i).meta, file.data(i)));
  return state;
}

std::vector<hash::StTensor> state_views(const TensorMap &state) {
  std::vector<hash::StTensor> views;
  views.reserve(state.size());
  for (const auto &[name, t] : state) {
    if (!t.is_contiguous() || t.device().type() != c10::kCPU)
      fail(Status::kInternal, "state tensor '{}' is not a contiguous CPU tensor", name);
    hash::StTensor v;
    v.meta.name = name;
    v.meta.dtype = from_torch(t.scalar_type(), name);
    for (int64_t d : t.sizes()) v.meta.shape.push_back(static_cast<uint64_t>(d));
    v.data = ByteView(static_cast<const uint8_t *>(t.data_ptr()), t.nbytes());
    views.push_back(std::move(v));
  }
  return views;
}

hash::Digest state_digest(const TensorMap &state, unsigned threads) {
  hash::StateBuilder b(threads);
  for (const hash::StTensor &v : state_views(state)) b.add_tensor(v.meta, v.data);
  return b.digest();
}

std::string group_lr_name(size_t g) {
  return g == 0 ? std::string(kLrName) : fmt::format("{}/{}", kLrName, g);
}

double state_learning_rate(const std::vector<hash::StTensor> &state, std::string_view name) {
  const hash::StTensor *t = nullptr;
  for (const hash::StTensor &v : state)
    if (v.meta.name == name) t = &v;
  if (!t) fail(Status::kInvalidArgument, "the state has no '{}' tensor (the learning rate of the next step)", name);
  if (t->meta.dtype != hash::DType::kF64 || !t->meta.shape.empty() || t->data.size() != 8)
    fail(Status::kInvalidArgument, "'{}' must be an F64 scalar (shape [])", name);
  double lr;
  std::memcpy(&lr, t->data.data(), 8);
  if (!std::isfinite(lr) || std::signbit(lr))
    fail(Status::kInvalidArgument, "'{}' = {}: a learning rate is finite and >= +0", name, lr);
  return lr;
}

const std::string &framework_version() {
  static const std::string v = TORCH_VERSION;
  return v;
}

void check_replayable(const spec::ExecutionSpec &spec) {
  // A step trained on another framework or version does not replay bit for
  // bit here (docs/determinism.md): refused, never judged. The patch level
  // is not compared: Debian's LibTorch 1.13.1 headers say 1.13.0.
  if (spec.framework != "pytorch")
    fail(Status::kUnsupported, "spec: framework '{}': this verifier replays pytorch", spec.framework);
  const std::string ours = fmt::format("{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
  const std::string &v = spec.framework_version;
  if (!witness::same_framework_release(framework_version(), v))
    fail(Status::kUnsupported,
         "spec: framework_version '{}': this verifier replays pytorch {}.x (LibTorch {}); a step trained on another "
         "version does not replay bit for bit",
         v, ours, TORCH_VERSION);
  // Every group's optimizer must exist, with its options, in this torch.
  for (size_t g = 0; g < spec.group_count(); ++g)
    check_supported(spec.group_optimizer(g), g == 0 ? std::string("spec: optimizer")
                                                    : fmt::format("spec: param_groups[{}].optimizer", g - 1));
  // The CPU replay runs attention as the program's ATen operators: the math path.
  if (spec.attention_backend != "math")
    fail(Status::kUnsupported, "spec: attention_backend '{}': this verifier replays 'math' only",
         spec.attention_backend);
}

std::optional<std::string> learning_rate_mismatch(double held, double expected, uint64_t step,
                                                  std::string_view name) {
  uint64_t a, b;
  std::memcpy(&a, &held, 8);
  std::memcpy(&b, &expected, 8);
  if (a == b) return std::nullopt;
  return fmt::format("{} = {:.17g}, the spec's learning-rate schedule gives step {} the rate {:.17g} (the "
                     "scheduler must step once after every optimizer step, as the spec's lr_schedule says)",
                     name, held, step, expected);
}

namespace {

// The inputs a replay needs agree with the spec and each other: the
// program, the step, this machine, the batch's shape, the seed's inputs.
void check_step_inputs(const Program &program, const spec::ExecutionSpec &spec, uint64_t step, const Batch &batch,
                       const StepOptions &options) {
  spec.validate();
  if (program.digest() != spec.model_program_digest)
    fail(Status::kProofMismatch, "the program's digest {} is not the spec's model_program_digest {}",
         program.digest().hex(), spec.model_program_digest.hex());
  if (step == 0) fail(Status::kInvalidArgument, "step 0 is not a training step (steps start at 1)");
  check_replayable(spec);
  if (!options.other_hardware_class) check_hardware_class(spec);
  // The dropout check ran when the program was loaded (it inlines the
  // forward graph: too slow for every step); a spec that differs in
  // dropout needs the program loaded for it.
  const double checked = program.checked_dropout();
  if (std::memcmp(&checked, &spec.dropout, sizeof(double)) != 0)
    fail(Status::kInvalidArgument,
         "the program was loaded for dropout {:.17g}, the spec says {:.17g}: load it for this spec", checked,
         spec.dropout);
  if (batch.size() != spec.grad_accum_microbatches)
    fail(Status::kInvalidArgument, "the batch has {} micro-batches, the spec {}", batch.size(),
         spec.grad_accum_microbatches);
  size_t samples = 0;
  for (const auto &mb : batch) {
    if (mb.empty()) fail(Status::kInvalidArgument, "a micro-batch is empty");
    samples += mb.size();
  }
  if (samples != spec.batch_size)
    fail(Status::kInvalidArgument, "the batch has {} samples, the spec's batch_size is {}", samples, spec.batch_size);
  if (spec.seed_policy == spec::SeedPolicyKind::kPerStep && !options.run_id)
    fail(Status::kInvalidArgument,
         "seed policy per_step: the seed of step {} names its run (docs/PROTOCOL.md section 9); give the run id", step);
  if (step == UINT64_MAX) fail(Status::kOutOfRange, "step {} has no successor", step);
}

// Each group's rate of step t and of step t + 1 (held in S_t).
struct StepRates {
  std::vector<double> lr, next_lr;
};

// Every group follows the one schedule from its own base rate; group g
// (>= 1) holds its rate as hparam/lr/<g>, and the pre-state must hold the
// schedule's rate of this step.
StepRates step_rates(const spec::ExecutionSpec &spec, uint64_t step, const TensorMap &pre,
                     const StepOptions &options) {
  double lr, next_lr;
  if (options.rates) {
    std::tie(lr, next_lr) = *options.rates;
  } else {
    double r[2];
    spec::learning_rates(spec.lr_schedule, spec.optimizer.lr, step, 2, r);
    lr = r[0];
    next_lr = r[1];
  }
  if (auto bad = learning_rate_mismatch(state_learning_rate(state_views(pre)), lr, step))
    fail(Status::kInvalidArgument, "pre-state: {}", *bad);
  StepRates rates{{lr}, {next_lr}};
  for (size_t g = 1; g < spec.group_count(); ++g) {
    double r[2];
    spec::learning_rates(spec.lr_schedule, spec.group_optimizer(g).lr, step, 2, r);
    const std::string name = group_lr_name(g);
    if (auto bad = learning_rate_mismatch(state_learning_rate(state_views(pre), name), r[0], step, name))
      fail(Status::kInvalidArgument, "pre-state: parameter group {}: {}", g, *bad);
    rates.lr.push_back(r[0]);
    rates.next_lr.push_back(r[1]);
  }
  return rates;
}

// Which group updates each parameter: the one whose params name it, else
// group 0. Every name a group lists must be a parameter of the program.
void check_group_names(const Program &program, const spec::ExecutionSpec &spec) {
  std::set<std::string> param_names;
  for (const auto &[n, t] : program.params()) param_names.insert(n);
  for (size_t g = 0; g < spec.param_groups.size(); ++g)
    for (const std::string &n : spec.param_groups[g].params)
      if (!param_names.count(n))
        fail(Status::kInvalidArgument, "spec: param_groups[{}] names '{}', which is not a parameter of the program",
             g, n);
}

// One optimizer entry "optim/<name>/<k>" of the pre-state, checked.
at::Tensor load_optim_entry(const TensorMap &pre, const std::string &key, const std::string &k, const at::Tensor &t,
                            bool eager, uint64_t step) {
  if (k != "step") {
    return is_scalar_key(k) ? need(pre, key, at::kFloat, {}).clone()
                            : need(pre, key, t.scalar_type(), t.sizes()).clone();
  }
  at::Tensor count = need(pre, key, at::kFloat, {}).clone();
  // A parameter's updates: at most one per step before t, at least one once
  // its state exists (Adagrad's exists from the start).
  const float c = count.item<float>();
  const float lo = eager ? 0.0f : 1.0f;
  if (!(c >= lo && c <= static_cast<float>(step - 1) && c == std::floor(c)))
    fail(Status::kInvalidArgument,
         "pre-state: '{}' = {}: the updates of a parameter before step {} are a whole number in {}..{}", key, c,
         step, lo, step - 1);
  return count;
}

// S_0 holds the optimizer's fresh state: torch.optim creates a parameter's
// state at its first update (Adagrad's in its constructor: step 0 and the
// initial accumulator). Seeding S_0 with state of the miner's choosing
// (moments so large that no gradient moves them) would let later steps be
// computed without a backward pass.
void check_fresh_state(const ParamState &ps, const spec::OptimizerSpec &o) {
  const std::map<std::string, at::Tensor> fresh = fresh_state(o, ps.param);
  bool is_fresh = ps.optim.size() == fresh.size();
  for (const auto &[k, want] : fresh) {
    auto it = ps.optim.find(k);
    is_fresh = is_fresh && it != ps.optim.end() && it->second.scalar_type() == want.scalar_type() &&
               differing_elements(it->second, want) == 0;
  }
  if (!is_fresh && fresh.empty())
    fail(Status::kInvalidArgument,
         "S_0 holds optimizer state for '{}': a run starts from the optimizer's fresh state, with no '{}{}/...' "
         "tensor (docs/PROTOCOL.md 21.1)",
         ps.name, kOptimPrefix, ps.name);
  if (!is_fresh)
    fail(Status::kInvalidArgument,
         "S_0's optimizer state for '{}' is not the optimizer's fresh state ('{}{}/step' = 0 and 'sum' full of "
         "initial_accumulator_value; docs/PROTOCOL.md 21.1)",
         ps.name, kOptimPrefix, ps.name);
}

// Parameter `name` of the program and its optimizer state, from S_{t-1};
// the names read go to `used`.
ParamState load_param(const std::string &name, const at::Tensor &t, const spec::ExecutionSpec &spec, uint64_t step,
                      const TensorMap &pre, std::set<std::string> &used) {
  if (t.scalar_type() != to_torch(spec.dtype))
    fail(Status::kInvalidArgument, "parameter '{}' of the program is {}, the spec's dtype is {}", name,
         c10::toString(t.scalar_type()), hash::dtype_name(spec.dtype));
  ParamState ps;
  ps.name = name;
  ps.param = t;
  ps.group = spec.group_of(name);
  const spec::OptimizerSpec &o = spec.group_optimizer(ps.group);
  check_param(o, t, fmt::format("parameter '{}' (group {}, {})", name, ps.group, spec::optimizer_name(o.kind)));
  const std::vector<std::string> keys = optimizer_keys(o);
  const bool eager = constructs_state(o);  // state before the first update (Adagrad)
  const std::string full = std::string(kParamPrefix) + name;
  ps.param.copy_(need(pre, full, t.scalar_type(), t.sizes()));
  ps.param.mutable_grad() = at::Tensor();  // zero_grad(set_to_none=True)
  used.insert(full);
  for (const std::string &k : keys) {
    const std::string key = fmt::format("{}{}/{}", kOptimPrefix, name, k);
    if (!pre.contains(key)) continue;
    used.insert(key);
    ps.optim.emplace(k, load_optim_entry(pre, key, k, t, eager, step));
  }
  if (step == 1) check_fresh_state(ps, o);
  const size_t present = ps.optim.size();
  const bool all_or_none = (present == 0 && !eager) || present == keys.size();
  if (!all_or_none)
    for (const std::string &k : keys)
      if (!ps.optim.count(k))
        fail(Status::kInvalidArgument,
             "pre-state: missing tensor '{}{}/{}' ({} of the {} optimizer entries of '{}' are present)", kOptimPrefix,
             name, k, present, keys.size(), name);
  return ps;
}

// Loads S_{t-1}'s parameters, optimizer state and buffers into the program.
std::vector<ParamState> load_pre_state(Program &program, const spec::ExecutionSpec &spec, uint64_t step,
                                       const TensorMap &pre, std::set<std::string> &used) {
  at::NoGradGuard no_grad;
  std::vector<ParamState> params;
  for (const auto &[name, t] : program.params()) params.push_back(load_param(name, t, spec, step, pre, used));
  for (const auto &[name, t] : program.buffers()) {
    const std::string full = std::string(kBufferPrefix) + name;
    t.copy_(need(pre, full, t.scalar_type(), t.sizes()));
    used.insert(full);
  }
  return params;
}

// The generator as the seed policy sets it for step t.
void seed_generator(at::Generator &gen, const spec::ExecutionSpec &spec, uint64_t step, const TensorMap &pre,
                    const StepOptions &options, std::set<std::string> &used) {
  if (spec.seed_policy == spec::SeedPolicyKind::kPerStep) {
    std::lock_guard<std::mutex> g(gen.mutex());
    gen.set_current_seed(spec::derive_seed(spec.seed, *options.run_id, step));
    return;
  }
  if (spec.seed_policy != spec::SeedPolicyKind::kSingleSeed) return;
  auto it = pre.find(std::string(kRngName));
  if (it == pre.end()) fail(Status::kInvalidArgument, "pre-state: missing tensor '{}' (seed policy single_seed)", kRngName);
  used.insert(std::string(kRngName));
  if (step == 1) {
    // S_0's generator is the one the spec's seed makes (torch.manual_seed):
    // a miner does not pick the random numbers of its run.
    const at::Tensor want = at::detail::createCPUGenerator(spec.seed).get_state();
    const at::Tensor &held = it->second;
    if (held.scalar_type() != at::kByte || held.numel() != want.numel() ||
        std::memcmp(held.data_ptr(), want.data_ptr(), static_cast<size_t>(want.numel())) != 0)
      fail(Status::kInvalidArgument,
           "S_0: '{}' is not the generator state of torch.manual_seed({}), the spec's single_seed seed", kRngName,
           spec.seed);
  }
  std::lock_guard<std::mutex> g(gen.mutex());
  try {
    gen.set_state(it->second);
  } catch (const c10::Error &e) {
    fail(Status::kInvalidArgument, "pre-state: '{}' is not a CPU generator state: {}", kRngName,
         e.what_without_backtrace());
  }
}

// The loss of one micro-batch divided by the micro-batch count, as a
// tensor, and its backward pass (the gradients accumulate in the
// parameters); recorded while `on` lives.
at::Tensor forward_backward(Program &program, std::vector<c10::IValue> inputs, size_t i, int64_t m) {
  const auto &forward = program.module().get_method("forward");
  c10::IValue out;
  try {
    out = forward(std::move(inputs));
  } catch (const c10::Error &e) {
    fail(Status::kInvalidArgument, "micro-batch {}: the forward failed: {}", i + 1, e.what_without_backtrace());
  } catch (const std::exception &e) {
    // The TorchScript interpreter rethrows an operator's error as a
    // std::runtime_error carrying both tracebacks.
    fail(Status::kInvalidArgument, "micro-batch {}: the forward failed: {}", i + 1, e.what());
  }
  if (!out.isTensor()) fail(Status::kInvalidArgument, "the forward returned {}, not a scalar loss tensor", out.tagKind());
  const at::Tensor raw = out.toTensor();
  if (raw.dim() != 0 || !at::isFloatingType(raw.scalar_type()))
    fail(Status::kInvalidArgument, "the forward returned a {} tensor of shape {}, not a scalar floating loss",
         c10::toString(raw.scalar_type()), shape_str(raw.sizes()));
  if (!raw.requires_grad())
    fail(Status::kInvalidArgument, "the forward's loss does not depend on any parameter (no gradient)");
  // `loss / accum`, as PyTorch users write it (a Python int: a wrapped
  // number in 2.x's overload; 1.13's Scalar path rounds alike).
  const at::Tensor scaled = kTorch2 ? raw.div(py_number(m)) : raw / m;
  try {
    scaled.backward();
  } catch (const c10::Error &e) {
    fail(Status::kInvalidArgument, "micro-batch {}: backward failed: {}", i + 1, e.what_without_backtrace());
  }
  return scaled;
}

// Micro-batch i's share of the loss; the recorder (if any) records its
// inputs, forward and backward, not the read of the loss.
double micro_batch(Program &program, const Batch &batch, size_t i, OpRecorder *rec) {
  std::vector<c10::IValue> inputs = collate(program, batch[i], i);
  if (rec)
    for (size_t k = 0; k < inputs.size(); ++k)
      rec->add_batch(static_cast<uint32_t>(i), program.inputs()[k], inputs[k].toTensor());
  at::Tensor scaled;
  {
    OpRecording on(rec);  // the forward, `loss / accum` and the backward
    scaled = forward_backward(program, std::move(inputs), i, static_cast<int64_t>(batch.size()));
  }
  return scaled.item<double>();
}

// A program's RNG use is the spec's, both ways. A spec that declares none
// (dropout 0, other_rng_use false) is held to it: a program that draws
// random numbers anyway would replay with whatever the generator holds
// (under seed policy none, the process's). One that declares it (dropout
// > 0 or other_rng_use) must draw: its per-step seeds are what makes the
// runs of a listed task differ (docs/PROTOCOL.md 17.1), and a program that
// draws nothing (a dropout module it never calls) would make them all one
// trajectory, so that one run's states are every identity's.
void check_rng_use(bool drew, const spec::ExecutionSpec &spec, uint64_t step) {
  const bool declared = spec.declares_rng();
  if (drew && !declared)
    fail(Status::kInvalidArgument,
         "the program draws random numbers, but the spec declares no RNG use (dropout 0, other_rng_use false)");
  if (!drew && declared)
    fail(Status::kInvalidArgument,
         "step {}: the spec declares {}, but the program drew no random numbers: declared randomness is what makes "
         "the runs of a task differ (docs/PROTOCOL.md 17.1)",
         step, spec.rng_declaration());
}

void check_finite(double loss, const std::vector<ParamState> &params, uint64_t step) {
  if (!std::isfinite(loss)) fail(Status::kNonFinite, "step {}: the loss is {}", step, loss);
  for (const ParamState &p : params) {
    const at::Tensor &g = p.param.grad();
    if (g.defined() && !at::isfinite(g).all().item<bool>())
      fail(Status::kNonFinite, "step {}: the gradient of '{}{}' holds a NaN or an infinity", step, kParamPrefix,
           p.name);
  }
}

// Clipping, the gradient's digest, the optimizer's update and the
// program's after_step hook. The gradient the optimizer consumes
// (accumulated, clipped), as a state "grad/<name>" (docs/PROTOCOL.md 21.3),
// is the value a witness states and the miner never publishes.
void update(Program &program, const spec::ExecutionSpec &spec, const TensorMap &pre, const StepRates &rates,
            std::vector<ParamState> &params, const StepOptions &options, OpRecorder *rec, StepResult &r) {
  at::NoGradGuard no_grad;
  if (spec.grad_clip_max_norm > 0) {
    OpRecording on(rec);
    clip_grad_norm(params, spec.grad_clip_max_norm);
  }
  if (spec.grad_clip_value > 0) {
    OpRecording on(rec);
    clip_grad_value(params, spec.grad_clip_value);
  }
  TensorMap grads;
  for (const ParamState &p : params)
    if (p.param.grad().defined())
      grads.emplace(std::string(kGradPrefix) + p.name, p.param.grad().detach().clone().contiguous());
  r.gradient_digest = state_digest(grads, options.hash_threads);
  r.gradient.learning_rate = rates.lr[0];
  for (ParamState &p : params) {
    if (!p.param.grad().defined()) continue;  // torch.optim skips parameters without a gradient
    traced_update(p, pre.at(std::string(kParamPrefix) + p.name), spec.group_optimizer(p.group), rates.lr[p.group],
                  r.gradient, rec);
  }
  if (program.has_after_step()) after_step(program, params, rec);
}

// S_t: the parameters, their optimizer state, the buffers, the next rates
// and (single_seed) the generator.
TensorMap post_state(Program &program, const spec::ExecutionSpec &spec, const StepRates &rates,
                     std::vector<ParamState> &params, at::Generator &gen) {
  TensorMap post;
  for (ParamState &p : params) {
    post.emplace(std::string(kParamPrefix) + p.name, p.param.detach().clone().contiguous());
    for (auto &[k, t] : p.optim) post.emplace(fmt::format("{}{}/{}", kOptimPrefix, p.name, k), t.contiguous());
    p.param.mutable_grad() = at::Tensor();
  }
  for (const auto &[name, t] : program.buffers())
    post.emplace(std::string(kBufferPrefix) + name, t.detach().clone().contiguous());
  for (size_t g = 0; g < spec.group_count(); ++g)
    post.emplace(group_lr_name(g), at::full({}, rates.next_lr[g], at::kDouble));
  if (spec.seed_policy == spec::SeedPolicyKind::kSingleSeed) {
    std::lock_guard<std::mutex> g(gen.mutex());
    post.emplace(std::string(kRngName), gen.get_state().contiguous());
  }
  return post;
}

// The parameters' update norm from S_{t-1} to S_t, and its bucket.
void update_norm_of(const TensorMap &pre, const spec::ExecutionSpec &spec, StepResult &r) {
  TensorMap pre_params, post_params;
  for (const auto &[name, t] : pre)
    if (starts_with(name, kParamPrefix)) pre_params.emplace(name, t.contiguous());
  for (const auto &[name, t] : r.post)
    if (starts_with(name, kParamPrefix)) post_params.emplace(name, t);
  r.update_norm = hash::update_norm(state_views(pre_params), state_views(post_params), std::string(kParamPrefix));
  r.norm_bucket = witness::norm_bucket(r.update_norm, spec.norm_bucket_resolution);
}

}  // namespace

StepResult replay_step(Program &program, const spec::ExecutionSpec &spec, uint64_t step, const TensorMap &pre,
                       const Batch &batch, const StepOptions &options) {
  check_step_inputs(program, spec, step, batch, options);
  const StepRates rates = step_rates(spec, step, pre, options);

  // Every replay changes process-wide LibTorch state (the default generator,
  // the thread count, the graph executor mode): one at a time.
  std::lock_guard<std::mutex> lock(torch_state_mutex());
  torch::jit::GraphOptimizerEnabledGuard no_jit_opt(false);  // run the ops eager PyTorch runs
  ThreadsGuard threads(step_threads(spec, options.intra_op_threads));
  at::AutoGradMode grad_mode(true);
  DeterministicGuard deterministic(spec.deterministic_algorithms);
  // pot-repro/1 (PROTOCOL 14.6): the step's operators compute in it, and one
  // without a kernel of the arithmetic voids the step (checked below).
  std::optional<repro_aten::Scope> repro;
  if (spec.reproducible()) repro.emplace();
  std::optional<OpRecorder> recorder;
  if (options.op_trace) {
    recorder.emplace();
    recorder->add_state(pre);
    if (options.op_trace->capture) recorder->capture(*options.op_trace->capture);
  }
  OpRecorder *rec = recorder ? &*recorder : nullptr;

  // Load S_{t-1} into the program; every name of the state must be used.
  check_group_names(program, spec);
  std::set<std::string> used;
  for (size_t g = 0; g < spec.group_count(); ++g) used.insert(group_lr_name(g));
  std::vector<ParamState> params = load_pre_state(program, spec, step, pre, used);
  auto gen = at::detail::getDefaultCPUGenerator();
  seed_generator(gen, spec, step, pre, options, used);
  for (const auto &[name, t] : pre)
    if (!used.count(name))
      fail(Status::kInvalidArgument, "pre-state: tensor '{}' is not a parameter, buffer or optimizer entry of this "
           "program and spec", name);

  // Forward and backward, micro-batch by micro-batch, the generator's
  // state probed around them (check_rng_use).
  at::Tensor rng_before;
  {
    std::lock_guard<std::mutex> g(gen.mutex());
    rng_before = gen.get_state();
  }
  program.module().train(true);
  double loss = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const double d = micro_batch(program, batch, i, rec);
    loss = i == 0 ? d : loss + d;
  }
  {
    std::lock_guard<std::mutex> g(gen.mutex());
    check_rng_use(!at::equal(gen.get_state(), rng_before), spec, step);
  }
  if (!options.allow_nonfinite_loss) check_finite(loss, params, step);

  StepResult r;
  update(program, spec, pre, rates, params, options, rec, r);
  r.post = post_state(program, spec, rates, params, gen);
  if (repro) repro->check();
  r.loss = loss;
  if (!options.allow_nonfinite_loss)
    if (auto bad = hash::nonfinite_tensor(state_views(r.post)))
      fail(Status::kNonFinite, "S_{} after the replay: {}", step, *bad);
  r.post_digest = state_digest(r.post, options.hash_threads);
  if (rec) {
    rec->finish(r.post, r.post_digest);
    options.op_trace->captured = rec->take_captured();
    options.op_trace->nodes = rec->take();
  }
  update_norm_of(pre, spec, r);
  return r;
}

}  // namespace pot::replay
