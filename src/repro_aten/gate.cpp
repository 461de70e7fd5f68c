#include "repro_aten/gate.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <torch/version.h>

#include "common/error.h"
#include "repro_aten/kernels.h"

namespace pot::repro_aten {

namespace {

// Operators that move, view, allocate, compare or convert values without
// arithmetic (PROTOCOL 14.6, "Operators without a kernel of their own"):
// any overload of these is allowed. A conversion between floating-point
// types rounds to nearest-even, as IEEE-754 defines it for every machine.
const std::set<std::string> &movement_operators() {
  static const std::set<std::string> ops = {
      "aten::_copy_from",  "aten::_has_compatible_shallow_copy_type",
      "aten::_local_scalar_dense",
      "aten::_reshape_alias", "aten::_to_copy",   "aten::abs",   "aten::_unsafe_view", "aten::alias",
      "aten::as_strided",  "aten::cat",          "aten::_cat",          "aten::chunk",
      "aten::clone",       "aten::contiguous",   "aten::copy_",         "aten::detach",
      "aten::detach_",     "aten::empty",        "aten::empty_like",    "aten::empty_strided",
      "aten::eq",          "aten::equal",        "aten::expand",       "aten::expand_as",     "aten::fill_",
      "aten::flatten",     "aten::full",         "aten::full_like",     "aten::ge",
      "aten::gt",          "aten::index_select", "aten::is_nonzero",    "aten::is_same_size", "aten::item",
      "aten::le",          "aten::lift_fresh",   "aten::lt",            "aten::masked_fill",
      "aten::masked_fill_",
      "aten::narrow",      "aten::ne",           "aten::new_empty",     "aten::new_empty_strided",
      "aten::new_zeros",   "aten::ones",         "aten::ones_like",     "aten::permute",
      "aten::requires_grad_", "aten::reshape",   "aten::resize_",       "aten::resolve_conj",
      "aten::resolve_neg", "aten::scalar_tensor", "aten::select",       "aten::set_",
      "aten::slice",       "aten::split",        "aten::squeeze",       "aten::stack",
      "aten::t",           "aten::transpose",    "aten::tril",          "aten::triu",    "aten::unbind",        "aten::unsafe_chunk", "aten::unsafe_split",        "aten::unsqueeze",  "aten::unsqueeze_",
      "aten::view",        "aten::view_as",      "aten::where",         "aten::zero_",
      "aten::zeros",       "aten::zeros_like",
  };
  return ops;
}

std::mutex g_install_mutex;
std::unique_ptr<torch::Library> g_library;
std::set<std::string> g_kernels;  // written once under g_install_mutex, then read only

// LibTorch warns once per replaced kernel; that replacing is the point.
struct Quiet : c10::WarningHandler {
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning &) override {}
#else
  void process(const c10::SourceLocation &, const std::string &, const bool) override {}
#endif
};

struct ThreadState {
  int depth = 0;
  // The thread's observer, registered while a scope is open on it; one
  // ended on another thread leaves it registered (idle at depth 0: a
  // thread-local callback is removed only by its own thread) for the next.
  uint64_t handle = 0;
  bool registered = false;
  std::vector<std::string> violations;  // distinct, first-seen order
  std::unordered_map<std::string, bool> allowed;  // decision cache
};
thread_local ThreadState t_state;

std::string op_key(const c10::OperatorName &name) {
  return name.overload_name.empty() ? name.name + ".default" : name.name + "." + name.overload_name;
}

// Operators whose only kernel (CompositeExplicitAutograd) calls other
// operators through the dispatcher, which this observer sees: torch 2.x's
// gradient clipping runs its per-tensor norms and products through these.
const std::set<std::string> &dispatching_operators() {
  static const std::set<std::string> ops = {
      // A Scalar operand wrapped into a tensor, then the Tensor overload.
      "aten::add.Scalar", "aten::add_.Scalar", "aten::sub.Scalar", "aten::sub_.Scalar", "aten::mul.Scalar",
      "aten::mul_.Scalar", "aten::div.Scalar", "aten::div_.Scalar",
      // Whole-tensor reductions: the dim overloads over every dim.
      "aten::sum.default", "aten::mean.default",
      // torch 2.x's clipping: one operator per tensor.
      "aten::_foreach_norm.Scalar", "aten::_foreach_mul_.Tensor", "aten::_foreach_mul_.Scalar",
      "aten::_foreach_mul.Tensor", "aten::_foreach_mul.Scalar",
      // The embedding's forward: index_select of the weight's rows.
      "aten::embedding.default"};
  return ops;
}

bool decide(const c10::OperatorName &name, const std::string &key) {
  if (g_kernels.count(key)) return true;
  if (movement_operators().count(name.name) || dispatching_operators().count(key)) return true;
  if (name.name.rfind("profiler::", 0) == 0) return true;  // the profiler's markers compute nothing
  if (name.name.rfind("aten::", 0) != 0) return false;  // another library's kernels: unknown arithmetic
  auto op = c10::Dispatcher::singleton().findOp(name);
  if (!op) return true;
  // A composite of other operators (no CPU or CompositeExplicitAutograd
  // kernel) computes through operators this observer sees too.
  return !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
         !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
}

// Whether a call computes on floating-point values: a floating or complex
// tensor among its arguments. Integer and bool arithmetic is exact on every
// machine, so an operator without a kernel may run on those.
bool floating_arguments(const at::RecordFunction &fn) {
  // A boxed call (the TorchScript interpreter's) hands the callback its
  // whole stack: the operator's arguments are the last ones.
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  const auto schema = fn.operator_schema();
  if (schema && !schema->is_vararg() && inputs.size() > schema->arguments().size())
    inputs = inputs.slice(inputs.size() - schema->arguments().size());
  for (const c10::IValue &v : inputs) {
    if (v.isTensor()) {
      const at::Tensor &t = v.toTensor();
      if (t.defined() && (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))) return true;
    } else if (v.isTensorList()) {
      for (const at::Tensor &t : v.toTensorList().vec())
        if (t.defined() && (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))) return true;
    }
  }
  return false;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn) {
  ThreadState &s = t_state;
  if (s.depth == 0) return nullptr;
  const auto name = fn.operator_name();
  if (!name) return nullptr;
  std::string key = op_key(*name);
  auto it = s.allowed.find(key);
  if (it == s.allowed.end()) it = s.allowed.emplace(key, decide(*name, key)).first;
  if (!it->second && floating_arguments(fn)) note_violation(key + " has no pot-repro/1 kernel");
  return nullptr;
}

}  // namespace

void install() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (g_library) return;
  Quiet quiet;
#if TORCH_VERSION_MAJOR >= 2
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
#else
  c10::Warning::WarningHandlerGuard guard(&quiet);
#endif
  auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__,
                                              static_cast<uint32_t>(__LINE__));
  std::vector<std::string> names;
  try {
    register_kernels(*lib, names);
  } catch (const c10::Error &e) {
    fail(Status::kBackend, "registering the pot-repro/1 kernels into ATen: {}", e.what_without_backtrace());
  }
  g_kernels.insert(names.begin(), names.end());
  g_library = std::move(lib);
}

bool active() { return t_state.depth > 0; }

std::vector<std::string> kernel_operators() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  return {g_kernels.begin(), g_kernels.end()};
}

void note_violation(const std::string &what) {
  ThreadState &s = t_state;
  if (s.depth > 0 && std::find(s.violations.begin(), s.violations.end(), what) == s.violations.end())
    s.violations.push_back(what);
}

struct Scope::State {
  at::RecordFunctionGuard enabled{true};
  ThreadState *owner = nullptr;  // the thread that made the scope
  // The outermost scope's view of LibTorch's oneDNN switch: off while it
  // lives, so that composites which pick a fused oneDNN kernel when it is
  // on (torch 2's CPU LSTM: mkldnn_rnn_layer) run through the arithmetic's
  // operators. Process-wide, as LibTorch keeps it.
  std::optional<bool> mkldnn_was;
};

Scope::Scope() {
  install();
  ThreadState &s = t_state;
  if (s.depth == 0) {
    s.violations.clear();
    if (!s.registered) {
      s.handle = at::addThreadLocalCallback(
          at::RecordFunctionCallback(on_start).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
      s.registered = true;
    }
  }
  ++s.depth;
  state_ = std::make_unique<State>();
  state_->owner = &s;
  if (s.depth == 1) {
    state_->mkldnn_was = at::globalContext().userEnabledMkldnn();
    at::globalContext().setUserEnabledMkldnn(false);
  }
}

Scope::~Scope() {
  if (state_->mkldnn_was) at::globalContext().setUserEnabledMkldnn(*state_->mkldnn_was);
  ThreadState &s = *state_->owner;
  // Ended on another thread (a recorder freed elsewhere): the owner's
  // callback stays registered, idle at depth 0.
  if (--s.depth == 0 && &s == &t_state) {
    at::removeCallback(s.handle);
    s.registered = false;
  }
}

void Scope::check() const {
  // The violations of the thread the scope began on (a recorder's end_step
  // may run on another thread than its begin_step).
  const auto &v = state_->owner->violations;
  if (v.empty()) return;
  std::string all;
  for (const std::string &w : v) all += (all.empty() ? "" : "; ") + w;
  fail(Status::kUnsupported, "arithmetic pot-repro/1: {} (docs/PROTOCOL.md 14.6 lists the arithmetic's operators)",
       all);
}

}  // namespace pot::repro_aten
