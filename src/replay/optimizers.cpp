#include "replay/optimizers.h"

#include <algorithm>
#include <cmath>

#include <ATen/ScalarOps.h>

#include "common/error.h"
#include "replay/torch_util.h"

namespace pot::replay {

using spec::OptimizerKind;

at::Tensor py_number(const at::Scalar &v) {
  at::Tensor t = at::scalar_to_tensor(v);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

std::vector<std::string> optimizer_keys(const spec::OptimizerSpec &o) {
  std::vector<std::string> k;
  switch (o.kind) {
    case OptimizerKind::kSgd:
      if (o.momentum != 0) k = {"momentum_buffer"};
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      k = {"exp_avg", "exp_avg_sq", "step"};
      if (o.amsgrad) k.push_back("max_exp_avg_sq");
      break;
    case OptimizerKind::kAdadelta:
      k = {"square_avg", "acc_delta"};
      if (kTorch2) k.push_back("step");
      break;
    case OptimizerKind::kAdagrad: k = {"step", "sum"}; break;
    case OptimizerKind::kRmsProp:
      k = {"square_avg"};
      if (o.momentum > 0) k.push_back("momentum_buffer");
      if (o.centered) k.push_back("grad_avg");
      if (kTorch2) k.push_back("step");
      break;
    case OptimizerKind::kAdamax: k = {"exp_avg", "exp_inf", "step"}; break;
    case OptimizerKind::kNAdam: k = {"exp_avg", "exp_avg_sq", "mu_product", "step"}; break;
    case OptimizerKind::kRAdam: k = {"exp_avg", "exp_avg_sq", "step"}; break;
    case OptimizerKind::kMuon: k = {"momentum_buffer"}; break;
  }
  return k;
}

bool is_scalar_key(const std::string &key) { return key == "step" || key == "mu_product"; }

bool constructs_state(const spec::OptimizerSpec &o) { return o.kind == OptimizerKind::kAdagrad; }

std::map<std::string, at::Tensor> fresh_state(const spec::OptimizerSpec &o, const at::Tensor &param) {
  std::map<std::string, at::Tensor> s;
  if (constructs_state(o)) {
    // Adagrad.__init__: state["step"] = torch.tensor(0.0), state["sum"] =
    // torch.full_like(p, initial_accumulator_value).
    s.emplace("step", at::zeros({}, at::kFloat));
    s.emplace("sum", at::full_like(param, o.initial_accumulator_value, at::MemoryFormat::Preserve));
  }
  return s;
}

void check_supported(const spec::OptimizerSpec &o, const std::string &where) {
  [[maybe_unused]] const char *name = spec::optimizer_name(o.kind);
  if constexpr (!kTorch2) {
    if (o.kind == OptimizerKind::kMuon)
      fail(Status::kUnsupported, "{}: torch {} has no torch.optim.Muon (torch >= 2.9 has)", where, TORCH_VERSION);
    if ((o.kind == OptimizerKind::kNAdam || o.kind == OptimizerKind::kRAdam) && o.maximize)
      fail(Status::kUnsupported, "{}: torch {}'s {} has no maximize option", where, TORCH_VERSION, name);
    if ((o.kind == OptimizerKind::kNAdam || o.kind == OptimizerKind::kRAdam) && o.decoupled_weight_decay)
      fail(Status::kUnsupported, "{}: torch {}'s {} has no decoupled_weight_decay option", where, TORCH_VERSION,
           name);
  }
}

void check_param(const spec::OptimizerSpec &o, const at::Tensor &param, const std::string &where) {
  if (o.kind == OptimizerKind::kMuon && param.dim() != 2)
    fail(Status::kInvalidArgument, "{}: muon updates 2-D parameters only, this one has shape {}", where,
         shape_str(param.sizes()));
}

// torch.nn.utils.clip_grad_norm_(parameters, max_norm), op for op: 1.13
// (a norm per gradient, then the norm of their stack) or 2.x
// (_get_total_norm: _foreach_norm, linalg.vector_norm of the stack; then
// _clip_grads_with_norm_: one _foreach_mul_ by the clamped coefficient).
void clip_grad_norm(const std::vector<ParamState> &params, double max_norm) {
  std::vector<at::Tensor> grads;
  for (const ParamState &p : params)
    if (p.param.grad().defined()) grads.push_back(p.param.grad());
  if (grads.empty()) return;
  if constexpr (kTorch2) {
    // One device and dtype (the spec's): _group_tensors_by_device_and_dtype
    // makes one group, in parameter order.
    std::vector<at::Tensor> detached;
    for (const at::Tensor &g : grads) detached.push_back(g.detach());
    const std::vector<at::Tensor> norms = at::_foreach_norm(detached, 2.0);
    const at::Tensor total_norm = at::linalg_vector_norm(at::stack(norms), 2.0);
    // `max_norm / (total_norm + 1e-6)`: add.Tensor, then Tensor.__rtruediv__.
    const at::Tensor clip_coef = total_norm.add(py_number(1e-6)).reciprocal().mul(py_number(max_norm));
    const at::Tensor clamped = at::clamp(clip_coef, c10::nullopt, 1.0);
    at::_foreach_mul_(detached, clamped);
    return;
  }
  std::vector<at::Tensor> norms;
  for (const at::Tensor &g : grads) {
    std::vector<int64_t> dims(static_cast<size_t>(g.dim()));
    for (int64_t i = 0; i < g.dim(); ++i) dims[static_cast<size_t>(i)] = i;
    norms.push_back(at::norm(g.detach(), 2.0, dims, false));
  }
  const at::Tensor total_norm = at::norm(at::stack(norms), 2.0, {0}, false);
  // Python's `max_norm / (total_norm + 1e-6)` is Tensor.__rtruediv__:
  // reciprocal() * max_norm.
  const at::Tensor clip_coef = (total_norm + 1e-6).reciprocal() * max_norm;
  const at::Tensor clamped = at::clamp(clip_coef, c10::nullopt, 1.0);
  for (const at::Tensor &g : grads) g.detach().mul_(clamped);
}

// torch.nn.utils.clip_grad_value_(parameters, clip_value): 1.13 clamps
// each gradient; 2.x (CPU tensors have foreach support) calls
// _foreach_clamp_min_(-clip_value) then _foreach_clamp_max_(clip_value).
void clip_grad_value(const std::vector<ParamState> &params, double clip_value) {
  std::vector<at::Tensor> grads;
  for (const ParamState &p : params)
    if (p.param.grad().defined()) grads.push_back(p.param.grad().detach());
  if (grads.empty()) return;
#if TORCH_VERSION_MAJOR >= 2
  at::_foreach_clamp_min_(grads, -clip_value);
  at::_foreach_clamp_max_(grads, clip_value);
#else
  for (at::Tensor &g : grads) g.clamp_(-clip_value, clip_value);
#endif
}

namespace {

// torch.optim's lazy state initialisation, at a parameter's first update:
// an F32 step count of 0 when `step` (the kind counts steps on this line),
// and a zero tensor shaped like the parameter for each of `zeros`.
void init_state(ParamState &p, bool step, std::initializer_list<const char *> zeros) {
  if (step) p.optim.emplace("step", at::zeros({}, at::kFloat));
  for (const char *k : zeros) p.optim.emplace(k, at::zeros_like(p.param, at::MemoryFormat::Preserve));
}

// torch.optim.SGD._single_tensor_sgd, one parameter whose gradient is
// `grad` (the same code in 1.13 and 2.x; the momentum's Python float is a
// wrapped number there).
void sgd_update(ParamState &p, const at::Tensor &grad, const spec::OptimizerSpec &o, double lr) {
  at::Tensor d_p = o.maximize ? grad.neg() : grad;
  if (o.weight_decay != 0) d_p = d_p.add(p.param, o.weight_decay);
  if (o.momentum != 0) {
    auto it = p.optim.find("momentum_buffer");
    if (it == p.optim.end()) {
      it = p.optim.emplace("momentum_buffer", d_p.clone().detach()).first;
    } else if constexpr (kTorch2) {
      it->second.mul_(py_number(o.momentum)).add_(d_p, 1 - o.dampening);
    } else {
      it->second.mul_(o.momentum).add_(d_p, 1 - o.dampening);
    }
    if (o.nesterov)
      d_p = d_p.add(it->second, o.momentum);
    else
      d_p = it->second;
  }
  p.param.add_(d_p, -lr);
}

// torch.optim.Adam / AdamW ._single_tensor_adam(w) (capturable and
// differentiable off), one parameter whose gradient is `grad`: 1.13's, or
// 2.x's (AdamW is Adam with decoupled_weight_decay).
void adam_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr,
                 bool decoupled) {
  if (p.optim.empty()) {
    init_state(p, true, {"exp_avg", "exp_avg_sq"});
    if (o.amsgrad) init_state(p, false, {"max_exp_avg_sq"});
  }
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  at::Tensor &exp_avg = p.optim.at("exp_avg");
  at::Tensor &exp_avg_sq = p.optim.at("exp_avg_sq");
  at::Tensor &step_t = p.optim.at("step");
  step_t.add_(1);
  if constexpr (kTorch2) {
    if (o.weight_decay != 0) {
      if (decoupled)
        p.param.mul_(py_number(1 - lr * o.weight_decay));
      else
        grad = grad.add(p.param, o.weight_decay);
    }
    exp_avg.lerp_(grad, 1 - o.beta1);
    exp_avg_sq.mul_(py_number(o.beta2)).addcmul_(grad, grad, 1 - o.beta2);
  } else {
    if (decoupled) {
      p.param.mul_(1 - lr * o.weight_decay);
    } else if (o.weight_decay != 0) {
      grad = grad.add(p.param, o.weight_decay);
    }
    exp_avg.mul_(o.beta1).add_(grad, 1 - o.beta1);
    exp_avg_sq.mul_(o.beta2).addcmul_(grad, decoupled ? grad : grad.conj(), 1 - o.beta2);
  }
  const double step = step_t.item<double>();
  const double bias_correction1 = 1 - std::pow(o.beta1, step);
  const double bias_correction2 = 1 - std::pow(o.beta2, step);
  const double step_size = lr / bias_correction1;
  // 1.13: math.sqrt; 2.x: `bias_correction2 ** 0.5` (Python's float pow).
  const double bias_correction2_sqrt = kTorch2 ? std::pow(bias_correction2, 0.5) : std::sqrt(bias_correction2);
  at::Tensor second = exp_avg_sq;
  if (o.amsgrad) {
    at::Tensor &max_sq = p.optim.at("max_exp_avg_sq");
    at::maximum_out(max_sq, max_sq, exp_avg_sq);
    second = max_sq;
  }
  at::Tensor denom;
  if constexpr (kTorch2)
    denom = second.sqrt().div(py_number(bias_correction2_sqrt)).add_(py_number(o.eps));
  else
    denom = (second.sqrt() / bias_correction2_sqrt).add_(o.eps);
  p.param.addcdiv_(exp_avg, denom, -step_size);
}

// torch.optim.Adadelta._single_tensor_adadelta (2.x also counts steps).
void adadelta_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) init_state(p, kTorch2, {"square_avg", "acc_delta"});
  if (kTorch2) p.optim.at("step").add_(py_number(1));
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  if (o.weight_decay != 0) grad = grad.add(p.param, o.weight_decay);
  at::Tensor &square_avg = p.optim.at("square_avg");
  at::Tensor &acc_delta = p.optim.at("acc_delta");
  square_avg.mul_(py_number(o.rho)).addcmul_(grad, grad, 1 - o.rho);
  const at::Tensor std_ = square_avg.add(py_number(o.eps)).sqrt_();
  at::Tensor delta = acc_delta.add(py_number(o.eps)).sqrt_();
  delta.div_(std_).mul_(grad);
  acc_delta.mul_(py_number(o.rho)).addcmul_(delta, delta, 1 - o.rho);
  p.param.add_(delta, -lr);
}

// torch.optim.Adagrad._single_tensor_adagrad (dense gradients).
void adagrad_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) p.optim = fresh_state(o, p.param);  // made by the constructor, before any step
  at::Tensor &step_t = p.optim.at("step");
  step_t.add_(py_number(1));
  const double step = step_t.item<double>();
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  if (o.weight_decay != 0) grad = grad.add(p.param, o.weight_decay);
  const double clr = lr / (1 + (step - 1) * o.lr_decay);
  at::Tensor &state_sum = p.optim.at("sum");
  state_sum.addcmul_(grad, grad, int64_t{1});
  const at::Tensor std_ = state_sum.sqrt().add_(py_number(o.eps));
  p.param.addcdiv_(grad, std_, -clr);
}

// torch.optim.RMSprop._single_tensor_rmsprop (2.x: lerp_ for the centered
// average, and a step count).
void rmsprop_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) {
    init_state(p, kTorch2, {"square_avg"});
    if (o.momentum > 0) init_state(p, false, {"momentum_buffer"});
    if (o.centered) init_state(p, false, {"grad_avg"});
  }
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  if (kTorch2) p.optim.at("step").add_(py_number(1));
  if (o.weight_decay != 0) grad = grad.add(p.param, o.weight_decay);
  at::Tensor &square_avg = p.optim.at("square_avg");
  square_avg.mul_(py_number(o.alpha)).addcmul_(grad, grad, 1 - o.alpha);
  at::Tensor avg;
  if (o.centered) {
    at::Tensor &grad_avg = p.optim.at("grad_avg");
    if constexpr (kTorch2)
      grad_avg.lerp_(grad, 1 - o.alpha);
    else
      grad_avg.mul_(py_number(o.alpha)).add_(grad, 1 - o.alpha);
    avg = square_avg.addcmul(grad_avg, grad_avg, int64_t{-1}).sqrt_();
  } else {
    avg = square_avg.sqrt();
  }
  avg = avg.add_(py_number(o.eps));
  if (o.momentum > 0) {
    at::Tensor &buf = p.optim.at("momentum_buffer");
    buf.mul_(py_number(o.momentum)).addcdiv_(grad, avg);
    p.param.add_(buf, -lr);
  } else {
    p.param.addcdiv_(grad, avg, -lr);
  }
}

// torch.optim.Adamax._single_tensor_adamax (1.13: cat + amax; 2.x: lerp_
// and maximum).
void adamax_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) init_state(p, true, {"exp_avg", "exp_inf"});
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  at::Tensor &exp_avg = p.optim.at("exp_avg");
  at::Tensor &exp_inf = p.optim.at("exp_inf");
  at::Tensor &step_t = p.optim.at("step");
  step_t.add_(py_number(1));
  if (o.weight_decay != 0) grad = grad.add(p.param, o.weight_decay);
  if constexpr (kTorch2) {
    exp_avg.lerp_(grad, 1 - o.beta1);
    const at::Tensor decayed = exp_inf.mul_(py_number(o.beta2));
    at::maximum_out(exp_inf, decayed, grad.abs().add_(py_number(o.eps)));
  } else {
    exp_avg.mul_(py_number(o.beta1)).add_(grad, 1 - o.beta1);
    const at::Tensor norm_buf =
        at::cat({exp_inf.mul_(py_number(o.beta2)).unsqueeze(0), grad.abs().add_(py_number(o.eps)).unsqueeze_(0)}, 0);
    at::amax_out(exp_inf, norm_buf, {0}, false);
  }
  const double bias_correction = 1 - std::pow(o.beta1, step_t.item<double>());
  const double clr = lr / bias_correction;
  p.param.addcdiv_(exp_avg, exp_inf, -clr);
}

// torch.optim.NAdam._single_tensor_nadam (2.x: maximize, decoupled weight
// decay, lerp_, and mu_product_next in Python floats, not a tensor).
void nadam_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) {
    init_state(p, true, {"exp_avg", "exp_avg_sq"});
    p.optim.emplace("mu_product", at::ones({}, at::kFloat));
  }
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  at::Tensor &exp_avg = p.optim.at("exp_avg");
  at::Tensor &exp_avg_sq = p.optim.at("exp_avg_sq");
  at::Tensor &mu_product = p.optim.at("mu_product");
  at::Tensor &step_t = p.optim.at("step");
  step_t.add_(py_number(1));
  const double step = step_t.item<double>();
  const double bias_correction2 = 1 - std::pow(o.beta2, step);
  if (o.weight_decay != 0) {
    if (o.decoupled_weight_decay)
      p.param.mul_(py_number(1 - lr * o.weight_decay));
    else
      grad = grad.add(p.param, o.weight_decay);
  }
  const double mu = o.beta1 * (1. - 0.5 * std::pow(0.96, step * o.momentum_decay));
  const double mu_next = o.beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay));
  mu_product.mul_(py_number(mu));
  if constexpr (kTorch2) {
    exp_avg.lerp_(grad, 1 - o.beta1);
    exp_avg_sq.mul_(py_number(o.beta2)).addcmul_(grad, grad, 1 - o.beta2);
    at::Tensor denom = exp_avg_sq.div(py_number(bias_correction2)).sqrt();
    const double mu_product_next = mu_product.item<double>() * mu_next;
    denom.add_(py_number(o.eps));
    p.param.addcdiv_(grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product.item<double>()));
    p.param.addcdiv_(exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next));
  } else {
    const at::Tensor mu_product_next = mu_product.mul(py_number(mu)).mul(py_number(mu_next));
    exp_avg.mul_(py_number(o.beta1)).add_(grad, 1 - o.beta1);
    exp_avg_sq.mul_(py_number(o.beta2)).addcmul_(grad, grad, 1 - o.beta2);
    const at::Tensor denom = exp_avg_sq.div(py_number(bias_correction2)).sqrt().add_(py_number(o.eps));
    p.param.addcdiv_(grad, denom, -lr * (1. - mu) / (1. - mu_product.item<double>()));
    p.param.addcdiv_(exp_avg, denom, -lr * mu_next / (1. - mu_product_next.item<double>()));
  }
}

// torch.optim.RAdam._single_tensor_radam (2.x: maximize, decoupled weight
// decay, lerp_, `** 0.5` for sqrt).
void radam_update(ParamState &p, const at::Tensor &grad_in, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) init_state(p, true, {"exp_avg", "exp_avg_sq"});
  at::Tensor grad = o.maximize ? grad_in.neg() : grad_in;
  at::Tensor &exp_avg = p.optim.at("exp_avg");
  at::Tensor &exp_avg_sq = p.optim.at("exp_avg_sq");
  at::Tensor &step_t = p.optim.at("step");
  step_t.add_(py_number(1));
  const double step = step_t.item<double>();
  if (o.weight_decay != 0) {
    if (o.decoupled_weight_decay)
      p.param.mul_(py_number(1 - lr * o.weight_decay));
    else
      grad = grad.add(p.param, o.weight_decay);
  }
  if constexpr (kTorch2)
    exp_avg.lerp_(grad, 1 - o.beta1);
  else
    exp_avg.mul_(py_number(o.beta1)).add_(grad, 1 - o.beta1);
  exp_avg_sq.mul_(py_number(o.beta2)).addcmul_(grad, grad, 1 - o.beta2);
  const double bias_correction1 = 1 - std::pow(o.beta1, step);
  const double bias_correction2 = 1 - std::pow(o.beta2, step);
  const at::Tensor bias_corrected_exp_avg = exp_avg.div(py_number(bias_correction1));
  const double rho_inf = 2 / (1 - o.beta2) - 1;
  const double rho_t = rho_inf - 2 * step * std::pow(o.beta2, step) / bias_correction2;
  if (rho_t > 5.) {
    const double r = (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t);
    const double rect = kTorch2 ? std::pow(r, 0.5) : std::sqrt(r);
    const double bc2_sqrt = kTorch2 ? std::pow(bias_correction2, 0.5) : std::sqrt(bias_correction2);
    // `number / tensor` is Tensor.__rtruediv__: reciprocal() * number.
    const at::Tensor adaptive_lr = exp_avg_sq.sqrt().add_(py_number(o.eps)).reciprocal().mul(py_number(bc2_sqrt));
    p.param.add_(bias_corrected_exp_avg.mul(py_number(lr)).mul(adaptive_lr).mul(py_number(rect)), -1.0);
  } else {
    p.param.add_(bias_corrected_exp_avg.mul(py_number(lr)), -1.0);
  }
}

// torch.optim._muon._zeropower_via_newtonschulz: the quintic Newton-Schulz
// iteration, in BF16.
at::Tensor zeropower_via_newtonschulz(const at::Tensor &grad, const spec::OptimizerSpec &o) {
  at::Tensor ortho = grad.to(at::kBFloat16, /*non_blocking=*/false, /*copy=*/true);
  const bool tall = grad.size(0) > grad.size(1);
  if (tall) ortho = ortho.t();
  ortho.div_(at::linalg_vector_norm(ortho, 2).clamp(o.eps));
  for (uint32_t i = 0; i < o.ns_steps; ++i) {
    const at::Tensor gram = at::matmul(ortho, ortho.t());
    const at::Tensor gram_update = at::addmm(gram, gram, gram, o.ns_b, o.ns_c);
    ortho = at::addmm(ortho, gram_update, ortho, o.ns_a);
  }
  if (tall) ortho = ortho.t();
  return ortho;
}

// torch.optim.Muon._single_tensor_muon (torch >= 2.9).
void muon_update(ParamState &p, const at::Tensor &grad, const spec::OptimizerSpec &o, double lr) {
  if (p.optim.empty()) p.optim.emplace("momentum_buffer", at::zeros_like(grad, at::MemoryFormat::Preserve));
  at::Tensor &buf = p.optim.at("momentum_buffer");
  buf.lerp_(grad, 1 - o.momentum);
  at::Tensor update = o.nesterov ? grad.lerp(buf, o.momentum) : buf;
  update = zeropower_via_newtonschulz(update, o);
  // _adjust_lr: A, B = param.shape[:2] (Python ints; A / B is a float).
  const double a = static_cast<double>(p.param.size(0)), b = static_cast<double>(p.param.size(1));
  double ratio;
  if (o.adjust_lr_fn == "original")
    ratio = std::sqrt(std::max(1.0, a / b));
  else if (o.adjust_lr_fn == "match_rms_adamw")
    ratio = 0.2 * std::sqrt(std::max(a, b));
  else
    ratio = std::sqrt(a / b);  // spectral_unclamped (the spec allows no other)
  const double adjusted_lr = lr * ratio;
  p.param.mul_(py_number(1 - lr * o.weight_decay));
  p.param.add_(update, -adjusted_lr);
}

}  // namespace

void optimizer_update(ParamState &p, const at::Tensor &grad, const spec::OptimizerSpec &o, double lr) {
  switch (o.kind) {
    case OptimizerKind::kSgd: sgd_update(p, grad, o, lr); return;
    case OptimizerKind::kAdam: adam_update(p, grad, o, lr, false); return;
    case OptimizerKind::kAdamW: adam_update(p, grad, o, lr, true); return;
    case OptimizerKind::kAdadelta: adadelta_update(p, grad, o, lr); return;
    case OptimizerKind::kAdagrad: adagrad_update(p, grad, o, lr); return;
    case OptimizerKind::kRmsProp: rmsprop_update(p, grad, o, lr); return;
    case OptimizerKind::kAdamax: adamax_update(p, grad, o, lr); return;
    case OptimizerKind::kNAdam: nadam_update(p, grad, o, lr); return;
    case OptimizerKind::kRAdam: radam_update(p, grad, o, lr); return;
    case OptimizerKind::kMuon:
      if constexpr (kTorch2) {
        muon_update(p, grad, o, lr);
        return;
      }
      break;
  }
  fail(Status::kUnsupported, "optimizer '{}' is not replayed by this build", spec::optimizer_name(o.kind));
}

}  // namespace pot::replay
