#include "replay/op_recorder.h"

#include <cstring>
#include <functional>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <fmt/format.h>

#include "repro_aten/gate.h"
#include "common/error.h"
#include "hash/tensor.h"
#include "replay/replay.h"
#include "replay/torch_util.h"

namespace pot::replay {

using dispute::OpNode;
using dispute::OpSource;
using dispute::OpTensor;
using dispute::OpValue;
using dispute::SourceKind;
using dispute::ValueKind;

namespace {

thread_local OpRecorder *t_recorder = nullptr;

// What the start callback hands the end callback: the node it opened.
struct Ctx : at::ObserverContext {
  size_t index = 0;
  size_t returns = SIZE_MAX;  // the schema's result count (SIZE_MAX: unknown, keep all)
};

// Operators whose result is memory nothing wrote yet: their output bytes
// are whatever the allocator returned, so the trace holds no chunk root for
// them (nor for their use before an operator writes them).
const std::set<std::string> &allocation_ops() {
  static const std::set<std::string> ops{"aten::empty",     "aten::empty_like",     "aten::empty_strided",
                                         "aten::new_empty", "aten::new_empty_strided"};
  return ops;
}

// Operators that draw from a generator even when none is passed.
bool random_op(const std::string &name) {
  static const char *const parts[] = {"bernoulli", "dropout", "rand", "normal", "uniform", "exponential",
                                      "geometric", "cauchy",  "log_normal", "multinomial", "poisson", "rrelu"};
  for (const char *p : parts)
    if (name.find(p) != std::string::npos) return true;
  return false;
}

// dtype, shape and chunk root: what makes two tensors' contents equal.
std::string content_key(const OpTensor &t) {
  std::string k(1, static_cast<char>(t.dtype));
  for (uint64_t d : t.shape) k += fmt::format("{},", d);
  k.append(reinterpret_cast<const char *>(t.chunk_root.bytes.data()), t.chunk_root.bytes.size());
  return k;
}

OpValue opaque(std::string what) {
  OpValue v;
  v.kind = ValueKind::kOpaque;
  v.text = std::move(what);
  return v;
}

// The layout of a tensor without its bytes: dtype, shape, strides; nullopt
// (and the reason) when it is not a dense CPU tensor of a pot dtype.
std::optional<std::string> tensor_layout(const at::Tensor &t, OpTensor &out) {
  if (!t.device().is_cpu()) return fmt::format("tensor:{}", t.device().str());
  if (t.layout() != at::kStrided) return "tensor:layout";
  if (t.is_quantized()) return "tensor:quantized";
  switch (t.scalar_type()) {
    case at::kBool: case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble:
      break;
    default:
      return fmt::format("tensor:{}", c10::toString(t.scalar_type()));
  }
  out.dtype = from_torch(t.scalar_type(), "operator tensor");
  out.shape.assign(t.sizes().begin(), t.sizes().end());
  out.strides.assign(t.strides().begin(), t.strides().end());
  return std::nullopt;
}

// A tensor's value without its bytes: None when undefined, Opaque when the
// trace cannot hold it, else a Tensor with its layout (no chunk root yet).
OpValue tensor_shell(const at::Tensor &t) {
  if (!t.defined()) return OpValue{};
  OpValue o;
  o.kind = ValueKind::kTensor;
  if (auto bad = tensor_layout(t, o.tensor)) return opaque(*bad);
  return o;
}

hash::Digest chunk_root_of(const at::Tensor &t) {
  const at::Tensor c = t.contiguous();
  const ByteView bytes(static_cast<const uint8_t *>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size());
  return hash::chunk_roots({bytes}, 1)[0];
}

OpValue scalar_value(const c10::IValue &v) {
  OpValue o;
  if (v.isNone()) return o;
  if (v.isInt()) {
    o.kind = ValueKind::kInt;
    o.integer = v.toInt();
  } else if (v.isDouble()) {
    o.kind = ValueKind::kDouble;
    const double d = v.toDouble();
    std::memcpy(&o.bits, &d, 8);
  } else if (v.isBool()) {
    o.kind = ValueKind::kBool;
    o.integer = v.toBool() ? 1 : 0;
  } else if (v.isString()) {
    o.kind = ValueKind::kString;
    o.text = v.toStringRef();
  } else if (v.isDevice()) {
    o.kind = ValueKind::kDevice;
    o.text = v.toDevice().str();
  } else if (v.isGenerator()) {
    o.kind = ValueKind::kGenerator;
  } else {
    o = opaque(v.tagKind());
  }
  return o;
}

std::unique_ptr<at::ObserverContext> start_callback(const at::RecordFunction &fn) {
  OpRecorder *r = t_recorder;
  if (!r) return nullptr;
  // Only operators nest: the autograd engine's "evaluate_function" events
  // (FUNCTION scope, no schema) wrap the backward's operators, which are
  // top-level.
  const auto name = fn.operator_name();
  if (!name) return nullptr;
  auto ctx = std::make_unique<Ctx>();
  ctx->index = SIZE_MAX;
  if (++r->depth != 1 || !r->active()) return ctx;
  try {
    // A boxed call (the TorchScript interpreter's) hands the callback its
    // whole stack: the operator's arguments are the last ones.
    c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    const auto schema = fn.operator_schema();
    if (schema && !schema->is_vararg() && inputs.size() > schema->arguments().size())
      inputs = inputs.slice(inputs.size() - schema->arguments().size());
    if (schema && !schema->is_varret()) ctx->returns = schema->returns().size();
    r->on_start(inputs, name->name, name->overload_name, &ctx->index);
  } catch (...) {
    ctx->index = SIZE_MAX;  // on_start keeps the failure; finish() reports it
  }
  return ctx;
}

void end_callback(const at::RecordFunction &fn, at::ObserverContext *ctx) {
  OpRecorder *r = t_recorder;
  if (!r || !ctx) return;
  --r->depth;
  const auto *c = static_cast<Ctx *>(ctx);
  if (c->index == SIZE_MAX) return;
  // As with the arguments, a boxed call's results are the stack's last values.
  const std::vector<c10::IValue> &outputs = fn.outputs();
  if (outputs.size() > c->returns)
    r->on_end(c->index, std::vector<c10::IValue>(outputs.end() - static_cast<std::ptrdiff_t>(c->returns), outputs.end()));
  else
    r->on_end(c->index, outputs);
}

}  // namespace

OpRecorder::OpRecorder() {
  if (t_recorder) fail(Status::kState, "an operator trace is already being recorded on this thread");
  t_recorder = this;
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(start_callback, end_callback)
                                           .needsInputs(true)
                                           .needsOutputs(true)
                                           .scopes({at::RecordScope::FUNCTION}));
}

OpRecorder::~OpRecorder() {
  at::removeCallback(handle_);
  t_recorder = nullptr;
}

void OpRecorder::add_state(const TensorMap &pre) {
  at::RecordFunctionGuard off(false);
  for (const auto &[name, t] : pre) {
    OpValue v = op_tensor_value(t);
    if (v.kind != ValueKind::kTensor) continue;
    state_.emplace(content_key(v.tensor), OpSource{SourceKind::kState, 0, 0, name});
  }
}

void OpRecorder::add_batch(uint32_t microbatch, const std::string &name, const at::Tensor &t) {
  at::RecordFunctionGuard off(false);
  OpValue v = op_tensor_value(t);
  if (v.kind == ValueKind::kTensor)
    batch_.emplace(content_key(v.tensor), OpSource{SourceKind::kBatch, 0, microbatch, name});
}


OpValue OpRecorder::input_value(const c10::IValue &v) {
  if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    OpValue o = tensor_shell(t);
    if (o.kind != ValueKind::kTensor) return o;
    auto u = uninit_.find(t.unsafeGetTensorImpl());
    if (u != uninit_.end() && u->second == static_cast<int64_t>(t._version())) {
      o.tensor.source.kind = SourceKind::kUninit;
      return o;
    }
    o.tensor.chunk_root = chunk_root_of(t);
    const std::string key = content_key(o.tensor);
    for (const auto *m : {&produced_, &state_, &batch_}) {
      auto it = m->find(key);
      if (it != m->end()) {
        o.tensor.source = it->second;
        break;
      }
    }
    return o;
  }
  if (v.isList()) {
    OpValue o;
    o.kind = ValueKind::kList;
    for (const c10::IValue &e : v.toListRef()) o.list.push_back(input_value(e));
    return o;
  }
  if (v.isTuple()) return opaque("Tuple");
  return scalar_value(v);
}

OpValue OpRecorder::output_value(const c10::IValue &v, bool allocation, uint32_t &slot, size_t node) {
  if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    OpValue o = tensor_shell(t);
    if (o.kind != ValueKind::kTensor) return o;
    if (allocation) {
      o.tensor.source.kind = SourceKind::kUninit;
      uninit_[t.unsafeGetTensorImpl()] = static_cast<int64_t>(t._version());
    } else {
      uninit_.erase(t.unsafeGetTensorImpl());
      o.tensor.chunk_root = chunk_root_of(t);
      produced_[content_key(o.tensor)] = OpSource{SourceKind::kNode, node, slot, {}};
    }
    ++slot;
    return o;
  }
  if (v.isList()) {
    OpValue o;
    o.kind = ValueKind::kList;
    for (const c10::IValue &e : v.toListRef()) o.list.push_back(output_value(e, allocation, slot, node));
    return o;
  }
  if (v.isTuple()) {
    OpValue o;
    o.kind = ValueKind::kList;
    for (const c10::IValue &e : v.toTupleRef().elements()) o.list.push_back(output_value(e, allocation, slot, node));
    return o;
  }
  return scalar_value(v);
}

void OpRecorder::on_start(const c10::ArrayRef<const c10::IValue> &inputs, const std::string &name,
                          const std::string &overload, size_t *index) {
  at::RecordFunctionGuard off(false);
  try {
    OpNode n;
    n.name = name;
    n.overload = overload;
    for (const c10::IValue &v : inputs) n.inputs.push_back(input_value(v));
    if (capture_ && *capture_ == nodes_.size())
      for (const c10::IValue &v : inputs) keep_bytes(v);
    *index = nodes_.size();
    nodes_.push_back(std::move(n));
  } catch (const std::exception &e) {
    if (error_.empty()) error_ = fmt::format("operator {}: {}", name, e.what());
    throw;
  }
}

void OpRecorder::keep_bytes(const c10::IValue &v) {
  if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    if (tensor_shell(t).kind != ValueKind::kTensor) return;  // not a tensor value of the node
    const at::Tensor c = t.contiguous();
    const auto *p = static_cast<const uint8_t *>(c.data_ptr());
    captured_.emplace_back(p, p + static_cast<size_t>(c.numel()) * c.element_size());
  } else if (v.isList()) {
    for (const c10::IValue &e : v.toListRef()) keep_bytes(e);
  }
}

void OpRecorder::on_end(size_t index, const std::vector<c10::IValue> &outputs) {
  at::RecordFunctionGuard off(false);
  try {
    OpNode &n = nodes_.at(index);
    const bool allocation = allocation_ops().count(n.name) > 0;
    uint32_t slot = 0;
    for (const c10::IValue &v : outputs) n.outputs.push_back(output_value(v, allocation, slot, index));
  } catch (const std::exception &e) {
    if (error_.empty()) error_ = fmt::format("operator {} (node {}): {}", nodes_.at(index).name, index, e.what());
  }
}

void OpRecorder::finish(const TensorMap &post, const hash::Digest &post_digest) {
  if (!error_.empty()) fail(Status::kInternal, "recording the operator trace: {}", error_);
  at::RecordFunctionGuard off(false);
  OpNode n;
  n.name = std::string(dispute::kPostStateOp);
  for (const auto &[name, t] : post) {
    OpValue s;
    s.kind = ValueKind::kString;
    s.text = name;
    n.inputs.push_back(std::move(s));
    n.inputs.push_back(input_value(t));
  }
  OpValue d;
  d.kind = ValueKind::kDigest;
  d.digest = post_digest;
  n.outputs.push_back(std::move(d));
  nodes_.push_back(std::move(n));
}

OpValue op_tensor_value(const at::Tensor &t) {
  at::RecordFunctionGuard off(false);
  OpValue o = tensor_shell(t);
  if (o.kind != ValueKind::kTensor) return o;
  o.tensor.chunk_root = chunk_root_of(t);
  return o;
}

namespace {

bool has_kind(const std::vector<OpValue> &values, ValueKind kind) {
  for (const OpValue &v : values)
    if (v.kind == kind || (v.kind == ValueKind::kList && has_kind(v.list, kind))) return true;
  return false;
}

// A tensor of t's dtype, shape and strides holding `bytes` (row-major).
at::Tensor rebuild(const OpTensor &t, const at::Tensor &bytes, size_t i) {
  const std::vector<int64_t> sizes(t.shape.begin(), t.shape.end());
  at::Tensor out;
  if (bytes.strides() == at::IntArrayRef(t.strides)) return bytes;
  // Expanded dims (stride 0) hold one slice: build the rest, then expand.
  std::vector<int64_t> compact = sizes;
  at::Tensor src = bytes;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (t.strides[d] == 0 && sizes[d] > 1) {
      compact[d] = 1;
      src = src.narrow(static_cast<int64_t>(d), 0, 1);
    }
  try {
    out = at::empty_strided(compact, t.strides, bytes.options());
    out.copy_(src);
    out = out.expand(sizes);
  } catch (const c10::Error &e) {
    fail(Status::kUnsupported, "input tensor {}: strides [{}] cannot be rebuilt: {}", i, fmt::join(t.strides, ", "),
         e.what_without_backtrace());
  }
  if (out.strides() != at::IntArrayRef(t.strides))
    fail(Status::kUnsupported, "input tensor {}: strides [{}] cannot be rebuilt (got [{}])", i,
         fmt::join(t.strides, ", "), fmt::join(out.strides(), ", "));
  return out;
}

c10::IValue to_ivalue(const OpValue &v, const std::vector<at::Tensor> &tensors, size_t &next,
                      const c10::TypePtr &type) {
  switch (v.kind) {
    case ValueKind::kNone: return c10::IValue();
    case ValueKind::kTensor: {
      const OpTensor &t = v.tensor;
      if (next >= tensors.size()) fail(Status::kInvalidArgument, "{} input tensors given, the node has more", tensors.size());
      const size_t i = next++;
      const at::Tensor &b = tensors[i];
      const std::vector<int64_t> sizes(t.shape.begin(), t.shape.end());
      if (b.scalar_type() != to_torch(t.dtype) || b.sizes() != at::IntArrayRef(sizes))
        fail(Status::kInvalidArgument, "input tensor {} is {} {}, the node says {} [{}]", i,
             c10::toString(b.scalar_type()), shape_str(b.sizes()), hash::dtype_name(t.dtype), fmt::join(t.shape, ", "));
      const at::Tensor c = b.contiguous();
      if (t.source.kind != SourceKind::kUninit && chunk_root_of(c) != t.chunk_root)
        fail(Status::kInvalidArgument, "input tensor {}: its bytes are not the node's (chunk root {}, the node's {})", i,
             chunk_root_of(c).hex(), t.chunk_root.hex());
      return rebuild(t, c.clone(), i);
    }
    case ValueKind::kInt: return c10::IValue(v.integer);
    case ValueKind::kDouble: {
      double d;
      std::memcpy(&d, &v.bits, 8);
      return c10::IValue(d);
    }
    case ValueKind::kBool: return c10::IValue(v.integer != 0);
    case ValueKind::kString: return c10::IValue(v.text);
    case ValueKind::kDevice: return c10::IValue(c10::Device(v.text));
    case ValueKind::kList: {
      // The schema's list type decides the IValue's list kind.
      c10::TypePtr elem = c10::TensorType::get();
      if (type) {
        c10::TypePtr t = type;
        if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
        if (auto list = t->cast<c10::ListType>()) elem = list->getElementType();
      }
      if (elem->kind() == c10::TypeKind::IntType) {
        std::vector<int64_t> xs;
        for (const OpValue &e : v.list) xs.push_back(e.integer);
        return c10::IValue(xs);
      }
      if (elem->kind() == c10::TypeKind::FloatType) {
        std::vector<double> xs;
        for (const OpValue &e : v.list) {
          double d;
          std::memcpy(&d, &e.bits, 8);
          xs.push_back(d);
        }
        return c10::IValue(xs);
      }
      if (elem->kind() == c10::TypeKind::BoolType) {
        c10::List<bool> xs;
        for (const OpValue &e : v.list) xs.push_back(e.integer != 0);
        return c10::IValue(xs);
      }
      if (elem->kind() == c10::TypeKind::TensorType) {
        std::vector<at::Tensor> xs;
        for (const OpValue &e : v.list) xs.push_back(to_ivalue(e, tensors, next, nullptr).toTensor());
        return c10::IValue(xs);
      }
      if (auto opt = elem->cast<c10::OptionalType>(); opt && opt->getElementType()->kind() == c10::TypeKind::TensorType) {
        c10::List<c10::optional<at::Tensor>> xs;
        for (const OpValue &e : v.list) {
          c10::IValue x = to_ivalue(e, tensors, next, nullptr);
          xs.push_back(x.isNone() ? c10::optional<at::Tensor>() : c10::optional<at::Tensor>(x.toTensor()));
        }
        return c10::IValue(xs);
      }
      fail(Status::kUnsupported, "a list of {} cannot be rebuilt", elem->str());
    }
    default: break;
  }
  fail(Status::kUnsupported, "a {} value cannot be rebuilt", static_cast<int>(v.kind));
}

}  // namespace

std::optional<std::string> not_executable(const OpNode &node) {
  if (node.name == dispute::kPostStateOp) return "the post-state node is checked, not run";
  if (has_kind(node.inputs, ValueKind::kGenerator) || random_op(node.name))
    return fmt::format("{} draws random numbers: the generator's state is not in the trace", node.name);
  if (has_kind(node.inputs, ValueKind::kOpaque) || has_kind(node.outputs, ValueKind::kOpaque))
    return fmt::format("{} has a value the trace does not hold", node.name);
  return std::nullopt;
}

std::vector<OpValue> execute_op(const spec::ExecutionSpec &spec, const OpNode &node,
                                const std::vector<at::Tensor> &tensors) {
  if (auto why = not_executable(node)) fail(Status::kUnsupported, "node {}: {}", dispute::describe(node), *why);
  const auto op = c10::Dispatcher::singleton().findSchema({node.name, node.overload});
  if (!op)
    fail(Status::kInvalidArgument, "operator {}.{} is not an operator of this LibTorch", node.name, node.overload);
  const c10::FunctionSchema &schema = op->schema();
  if (node.inputs.size() != schema.arguments().size())
    fail(Status::kInvalidArgument, "node {}: {} arguments, the schema {} takes {}", dispute::describe(node),
         node.inputs.size(), schema.name(), schema.arguments().size());
  at::RecordFunctionGuard off(false);
  std::lock_guard<std::mutex> lock(torch_state_mutex());
  ThreadsGuard threads(step_threads(spec));
  DeterministicGuard deterministic(spec.deterministic_algorithms);
  // The referee runs a pot-repro/1 operator in the arithmetic: any CPU gets
  // the step's bits.
  std::optional<repro_aten::Scope> repro;
  if (spec.reproducible()) repro.emplace();
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  torch::jit::Stack stack;
  size_t next = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    stack.push_back(to_ivalue(node.inputs[i], tensors, next, schema.arguments()[i].type()));
  if (next != tensors.size())
    fail(Status::kInvalidArgument, "{} input tensors given, the node has {}", tensors.size(), next);
  try {
    op->callBoxed(&stack);
  } catch (const c10::Error &e) {
    fail(Status::kInvalidArgument, "node {}: LibTorch refuses it: {}", dispute::describe(node),
         e.what_without_backtrace());
  }
  if (repro) repro->check();
  // The outputs as the recorder writes them: no sources, no uninit tracking
  // beyond the allocation operators' own results.
  const bool allocation = allocation_ops().count(node.name) > 0;
  std::vector<OpValue> out;
  std::function<OpValue(const c10::IValue &)> value = [&](const c10::IValue &v) -> OpValue {
    if (v.isTensor()) {
      if (allocation) {
        OpValue o = tensor_shell(v.toTensor());
        if (o.kind == ValueKind::kTensor) o.tensor.source.kind = SourceKind::kUninit;
        return o;
      }
      return op_tensor_value(v.toTensor());
    }
    if (v.isList() || v.isTuple()) {
      OpValue o;
      o.kind = ValueKind::kList;
      if (v.isList())
        for (const c10::IValue &e : v.toListRef()) o.list.push_back(value(e));
      else
        for (const c10::IValue &e : v.toTupleRef().elements()) o.list.push_back(value(e));
      return o;
    }
    return scalar_value(v);
  };
  for (const c10::IValue &v : stack) out.push_back(value(v));
  return out;
}

}  // namespace pot::replay
