#include "commit/spec.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <cmath>

#include "commit/canonical.h"
#include "commit/hardware_class.h"
#include "commit/json_fields.h"
#include "common/error.h"
#include "pot/v2/spec.pb.h"

namespace pot::commit {

namespace {

constexpr size_t kMaxLabel = 64;

[[noreturn]] void rule(const std::string &what) { throw Error(Status::kInvalidArgument, "spec: " + what); }

void label(const std::string &v, const char *name) {
  if (v.empty() || v.size() > kMaxLabel) rule(fmt::format("{} must be 1..{} bytes", name, kMaxLabel));
  if (!is_valid_utf8(v)) rule(fmt::format("{} is not valid UTF-8", name));
}

void finite_range(double v, double lo, double hi, bool hi_open, const char *name) {
  if (!std::isfinite(v) || v < lo || (hi_open ? v >= hi : v > hi))
    rule(fmt::format("{} = {} is outside [{}, {}{}", name, v, lo, hi, hi_open ? ")" : "]"));
}

const char *optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "?";
}

const char *phase_name(LrPhaseKind k) {
  switch (k) {
    case LrPhaseKind::kStep: return "step";
    case LrPhaseKind::kMultiStep: return "multi_step";
    case LrPhaseKind::kExponential: return "exponential";
    case LrPhaseKind::kCosine: return "cosine";
    case LrPhaseKind::kLinear: return "linear";
    case LrPhaseKind::kConstant: return "constant";
  }
  return "?";
}

void schedule_to_proto(const LrSchedule &s, v2::LrSchedule *p) {
  for (const LrPhase &ph : s.phases) {
    v2::LrPhase *q = p->add_phases();
    switch (ph.kind) {
      case LrPhaseKind::kStep:
        q->mutable_step()->set_step_size(ph.step_size);
        q->mutable_step()->set_gamma(ph.gamma);
        break;
      case LrPhaseKind::kMultiStep:
        for (uint64_t m : ph.milestones) q->mutable_multi_step()->add_milestones(m);
        q->mutable_multi_step()->set_gamma(ph.gamma);
        break;
      case LrPhaseKind::kExponential: q->mutable_exponential()->set_gamma(ph.gamma); break;
      case LrPhaseKind::kCosine:
        q->mutable_cosine()->set_t_max(ph.t_max);
        q->mutable_cosine()->set_eta_min(ph.eta_min);
        break;
      case LrPhaseKind::kLinear:
        q->mutable_linear()->set_start_factor(ph.start_factor);
        q->mutable_linear()->set_end_factor(ph.end_factor);
        q->mutable_linear()->set_total_iters(ph.total_iters);
        break;
      case LrPhaseKind::kConstant:
        q->mutable_constant()->set_factor(ph.factor);
        q->mutable_constant()->set_total_iters(ph.total_iters);
        break;
    }
  }
  for (uint64_t m : s.milestones) p->add_milestones(m);
}

LrSchedule schedule_from_proto(const v2::LrSchedule &p) {
  LrSchedule s;
  if (static_cast<size_t>(p.phases_size()) > kMaxLrPhases)
    fail(Status::kMalformed, "spec: lr_schedule has {} phases, at most {}", p.phases_size(), kMaxLrPhases);
  for (const v2::LrPhase &q : p.phases()) {
    LrPhase ph;
    switch (q.kind_case()) {
      case v2::LrPhase::kStep:
        ph.kind = LrPhaseKind::kStep;
        ph.step_size = q.step().step_size();
        ph.gamma = q.step().gamma();
        break;
      case v2::LrPhase::kMultiStep:
        ph.kind = LrPhaseKind::kMultiStep;
        ph.milestones.assign(q.multi_step().milestones().begin(), q.multi_step().milestones().end());
        ph.gamma = q.multi_step().gamma();
        break;
      case v2::LrPhase::kExponential:
        ph.kind = LrPhaseKind::kExponential;
        ph.gamma = q.exponential().gamma();
        break;
      case v2::LrPhase::kCosine:
        ph.kind = LrPhaseKind::kCosine;
        ph.t_max = q.cosine().t_max();
        ph.eta_min = q.cosine().eta_min();
        break;
      case v2::LrPhase::kLinear:
        ph.kind = LrPhaseKind::kLinear;
        ph.start_factor = q.linear().start_factor();
        ph.end_factor = q.linear().end_factor();
        ph.total_iters = q.linear().total_iters();
        break;
      case v2::LrPhase::kConstant:
        ph.kind = LrPhaseKind::kConstant;
        ph.factor = q.constant().factor();
        ph.total_iters = q.constant().total_iters();
        break;
      default: fail(Status::kMalformed, "spec: an lr_schedule phase has no scheduler kind");
    }
    s.phases.push_back(std::move(ph));
  }
  s.milestones.assign(p.milestones().begin(), p.milestones().end());
  return s;
}

std::vector<uint64_t> json_steps(const nlohmann::json &j, const std::string &where) {
  if (!j.is_array()) fail(Status::kInvalidArgument, "{} must be an array of step numbers", where);
  if (j.size() > kMaxLrMilestones) fail(Status::kInvalidArgument, "{}: at most {} entries", where, kMaxLrMilestones);
  std::vector<uint64_t> out;
  for (const auto &v : j) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail(Status::kInvalidArgument, "{} must hold unsigned integers", where);
    out.push_back(v.get<uint64_t>());
  }
  return out;
}

LrSchedule schedule_from_json(const nlohmann::json &j) {
  const JsonFields f(j, "spec.lr_schedule");
  f.only({"phases", "milestones"});
  LrSchedule s;
  const nlohmann::json &phases = f.value("phases");
  if (!phases.is_array() || phases.empty() || phases.size() > kMaxLrPhases)
    fail(Status::kInvalidArgument, "spec.lr_schedule.phases must be an array of 1..{} schedulers", kMaxLrPhases);
  for (size_t i = 0; i < phases.size(); ++i) {
    const JsonFields p(phases[i], fmt::format("spec.lr_schedule.phases[{}]", i));
    const std::string kind = p.str("kind");
    LrPhase ph;
    if (kind == "step") {
      p.only({"kind", "step_size", "gamma"});
      ph.kind = LrPhaseKind::kStep;
      ph.step_size = p.u32("step_size");
      ph.gamma = p.f64("gamma");
    } else if (kind == "multi_step") {
      p.only({"kind", "milestones", "gamma"});
      ph.kind = LrPhaseKind::kMultiStep;
      ph.milestones = json_steps(p.value("milestones"), p.path("milestones"));
      ph.gamma = p.f64("gamma");
    } else if (kind == "exponential") {
      p.only({"kind", "gamma"});
      ph.kind = LrPhaseKind::kExponential;
      ph.gamma = p.f64("gamma");
    } else if (kind == "cosine") {
      p.only({"kind", "t_max", "eta_min"});
      ph.kind = LrPhaseKind::kCosine;
      ph.t_max = p.u32("t_max");
      ph.eta_min = p.has("eta_min") ? p.f64("eta_min") : 0;
    } else if (kind == "linear") {
      p.only({"kind", "start_factor", "end_factor", "total_iters"});
      ph.kind = LrPhaseKind::kLinear;
      ph.start_factor = p.f64("start_factor");
      ph.end_factor = p.f64("end_factor");
      ph.total_iters = p.u32("total_iters");
    } else if (kind == "constant") {
      p.only({"kind", "factor", "total_iters"});
      ph.kind = LrPhaseKind::kConstant;
      ph.factor = p.f64("factor");
      ph.total_iters = p.u32("total_iters");
    } else {
      fail(Status::kInvalidArgument,
           "{}.kind '{}' is unknown (step, multi_step, exponential, cosine, linear or constant)", p.path("kind"), kind);
    }
    s.phases.push_back(std::move(ph));
  }
  if (f.has("milestones")) s.milestones = json_steps(f.value("milestones"), "spec.lr_schedule.milestones");
  return s;
}

nlohmann::json schedule_to_json(const LrSchedule &s) {
  nlohmann::json phases = nlohmann::json::array();
  for (const LrPhase &ph : s.phases) {
    nlohmann::json p = {{"kind", phase_name(ph.kind)}};
    switch (ph.kind) {
      case LrPhaseKind::kStep: p["step_size"] = ph.step_size; p["gamma"] = ph.gamma; break;
      case LrPhaseKind::kMultiStep: p["milestones"] = ph.milestones; p["gamma"] = ph.gamma; break;
      case LrPhaseKind::kExponential: p["gamma"] = ph.gamma; break;
      case LrPhaseKind::kCosine: p["t_max"] = ph.t_max; p["eta_min"] = ph.eta_min; break;
      case LrPhaseKind::kLinear:
        p["start_factor"] = ph.start_factor;
        p["end_factor"] = ph.end_factor;
        p["total_iters"] = ph.total_iters;
        break;
      case LrPhaseKind::kConstant: p["factor"] = ph.factor; p["total_iters"] = ph.total_iters; break;
    }
    phases.push_back(std::move(p));
  }
  return {{"phases", phases}, {"milestones", s.milestones}};
}

const char *policy_name(SeedPolicyKind k) {
  switch (k) {
    case SeedPolicyKind::kPerStep: return "per_step";
    case SeedPolicyKind::kSingleSeed: return "single_seed";
    case SeedPolicyKind::kNone: return "none";
  }
  return "?";
}

v2::ExecutionSpec to_proto(const ExecutionSpec &s) {
  v2::ExecutionSpec p;
  p.set_framework(s.framework);
  p.set_framework_version(s.framework_version);
  p.set_model_program_digest(s.model_program_digest.bytes.data(), s.model_program_digest.bytes.size());
  p.set_dtype(static_cast<uint32_t>(s.dtype));
  p.set_attention_backend(s.attention_backend);
  p.set_dropout(s.dropout);
  p.set_other_rng_use(s.other_rng_use);
  const OptimizerSpec &o = s.optimizer;
  if (o.kind == OptimizerKind::kSgd) {
    v2::Sgd *g = p.mutable_optimizer()->mutable_sgd();
    g->set_lr(o.lr);
    g->set_momentum(o.momentum);
    g->set_dampening(o.dampening);
    g->set_nesterov(o.nesterov);
    g->set_weight_decay(o.weight_decay);
  } else {
    v2::Adam *a = o.kind == OptimizerKind::kAdam ? p.mutable_optimizer()->mutable_adam()
                                                 : p.mutable_optimizer()->mutable_adamw();
    a->set_lr(o.lr);
    a->set_beta1(o.beta1);
    a->set_beta2(o.beta2);
    a->set_eps(o.eps);
    a->set_weight_decay(o.weight_decay);
    a->set_amsgrad(o.amsgrad);
  }
  p.set_grad_clip_max_norm(s.grad_clip_max_norm);
  p.set_grad_accum_microbatches(s.grad_accum_microbatches);
  p.set_batch_size(s.batch_size);
  p.set_deterministic_algorithms(s.deterministic_algorithms);
  p.set_intra_op_threads(s.intra_op_threads);
  p.set_hardware_class(s.hardware_class);
  switch (s.seed_policy) {
    case SeedPolicyKind::kPerStep: p.mutable_seed_policy()->mutable_per_step()->set_base_seed(s.seed); break;
    case SeedPolicyKind::kSingleSeed: p.mutable_seed_policy()->mutable_single_seed()->set_seed(s.seed); break;
    case SeedPolicyKind::kNone: p.mutable_seed_policy()->mutable_none(); break;
  }
  p.set_norm_bucket_resolution(s.norm_bucket_resolution);
  if (!s.lr_schedule.empty()) schedule_to_proto(s.lr_schedule, p.mutable_lr_schedule());
  return p;
}

ExecutionSpec from_proto(const v2::ExecutionSpec &p) {
  ExecutionSpec s;
  s.framework = p.framework();
  s.framework_version = p.framework_version();
  s.model_program_digest = digest_field(p.model_program_digest(), "spec: model_program_digest");
  if (!hash::dtype_valid(static_cast<int>(std::min<uint32_t>(p.dtype(), 256))))
    fail(Status::kMalformed, "spec: dtype code {} is not a pot_dtype", p.dtype());
  s.dtype = static_cast<hash::DType>(p.dtype());
  s.attention_backend = p.attention_backend();
  s.dropout = p.dropout();
  s.other_rng_use = p.other_rng_use();
  const v2::Optimizer &o = p.optimizer();
  if (o.has_sgd()) {
    s.optimizer.kind = OptimizerKind::kSgd;
    s.optimizer.lr = o.sgd().lr();
    s.optimizer.momentum = o.sgd().momentum();
    s.optimizer.dampening = o.sgd().dampening();
    s.optimizer.nesterov = o.sgd().nesterov();
    s.optimizer.weight_decay = o.sgd().weight_decay();
  } else if (o.has_adam() || o.has_adamw()) {
    const v2::Adam &a = o.has_adam() ? o.adam() : o.adamw();
    s.optimizer.kind = o.has_adam() ? OptimizerKind::kAdam : OptimizerKind::kAdamW;
    s.optimizer.lr = a.lr();
    s.optimizer.beta1 = a.beta1();
    s.optimizer.beta2 = a.beta2();
    s.optimizer.eps = a.eps();
    s.optimizer.weight_decay = a.weight_decay();
    s.optimizer.amsgrad = a.amsgrad();
  } else {
    rule("optimizer is missing or unknown (sgd, adam or adamw)");
  }
  s.grad_clip_max_norm = p.grad_clip_max_norm();
  s.grad_accum_microbatches = p.grad_accum_microbatches();
  s.batch_size = p.batch_size();
  s.deterministic_algorithms = p.deterministic_algorithms();
  s.intra_op_threads = p.intra_op_threads();
  s.hardware_class = p.hardware_class();
  const v2::SeedPolicy &sp = p.seed_policy();
  if (sp.has_per_step()) {
    s.seed_policy = SeedPolicyKind::kPerStep;
    s.seed = sp.per_step().base_seed();
  } else if (sp.has_single_seed()) {
    s.seed_policy = SeedPolicyKind::kSingleSeed;
    s.seed = sp.single_seed().seed();
  } else if (sp.has_none()) {
    s.seed_policy = SeedPolicyKind::kNone;
  } else {
    rule("seed_policy is missing (per_step, single_seed or none)");
  }
  s.norm_bucket_resolution = p.norm_bucket_resolution();
  // A present but empty schedule does not re-encode: refused as not canonical.
  if (p.has_lr_schedule()) s.lr_schedule = schedule_from_proto(p.lr_schedule());
  return s;
}

}  // namespace

void ExecutionSpec::validate() const {
  label(framework, "framework");
  label(framework_version, "framework_version");
  if (dtype != hash::DType::kF16 && dtype != hash::DType::kBF16 && dtype != hash::DType::kF32 &&
      dtype != hash::DType::kF64)
    rule(fmt::format("dtype {} is not a floating-point training dtype (F16, BF16, F32, F64)",
                     hash::dtype_name(dtype)));
  label(attention_backend, "attention_backend");
  finite_range(dropout, 0, 1, true, "dropout");
  if ((dropout > 0 || other_rng_use) && seed_policy == SeedPolicyKind::kNone)
    rule(dropout > 0 ? "dropout > 0 draws from the RNG: a seed policy (per_step or single_seed) is required"
                     : "other_rng_use is declared: a seed policy (per_step or single_seed) is required");
  const OptimizerSpec &o = optimizer;
  if (!(std::isfinite(o.lr) && o.lr > 0)) rule(fmt::format("optimizer.lr = {} must be finite and > 0", o.lr));
  finite_range(o.weight_decay, 0, 1e6, false, "optimizer.weight_decay");
  switch (o.kind) {
    case OptimizerKind::kSgd:
      finite_range(o.momentum, 0, 1, true, "optimizer.momentum");
      finite_range(o.dampening, 0, 1, false, "optimizer.dampening");
      if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
        rule("optimizer.nesterov requires momentum > 0 and dampening = 0 (torch.optim.SGD)");
      if (o.beta1 != 0 || o.beta2 != 0 || o.eps != 0 || o.amsgrad)
        rule("optimizer: betas, eps and amsgrad do not apply to sgd");
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      finite_range(o.beta1, 0, 1, true, "optimizer.beta1");
      finite_range(o.beta2, 0, 1, true, "optimizer.beta2");
      if (!(std::isfinite(o.eps) && o.eps > 0)) rule(fmt::format("optimizer.eps = {} must be finite and > 0", o.eps));
      if (o.momentum != 0 || o.dampening != 0 || o.nesterov)
        rule(fmt::format("optimizer: momentum, dampening and nesterov do not apply to {}", optimizer_name(o.kind)));
      break;
    default:
      rule("optimizer kind is unknown (sgd, adam or adamw)");
  }
  finite_range(grad_clip_max_norm, 0, 1e12, false, "grad_clip_max_norm");
  if (grad_accum_microbatches < 1 || grad_accum_microbatches > 65536)
    rule(fmt::format("grad_accum_microbatches = {} is outside 1..65536", grad_accum_microbatches));
  if (batch_size < grad_accum_microbatches || batch_size > (1u << 24))
    rule(fmt::format("batch_size = {} must be in grad_accum_microbatches..2^24", batch_size));
  if (intra_op_threads < 1 || intra_op_threads > 1024)
    rule(fmt::format("intra_op_threads = {}: the thread count must be pinned to 1..1024 (it changes the bits)",
                     intra_op_threads));
  label(hardware_class, "hardware_class");
  parse_hardware_class(hardware_class);
  if (seed_policy != SeedPolicyKind::kPerStep && seed_policy != SeedPolicyKind::kSingleSeed &&
      seed_policy != SeedPolicyKind::kNone)
    rule("seed_policy is unknown");
  if (seed_policy == SeedPolicyKind::kNone && seed != 0) rule("seed_policy none carries no seed");
  if (norm_bucket_resolution < 1 || norm_bucket_resolution > 65536)
    rule(fmt::format("norm_bucket_resolution = {} is outside 1..65536", norm_bucket_resolution));
  lr_schedule.validate();
}

double ExecutionSpec::learning_rate(uint64_t step) const { return commit::learning_rate(lr_schedule, optimizer.lr, step); }

Bytes ExecutionSpec::encode() const {
  validate();
  const std::string s = to_proto(*this).SerializeAsString();
  return Bytes(s.begin(), s.end());
}

ExecutionSpec ExecutionSpec::decode(ByteView b) {
  ExecutionSpec s = from_proto(parse_bounded<v2::ExecutionSpec>(b, kMaxSpecBytes, "spec"));
  s.validate();
  require_canonical(s.encode(), b, "spec");
  return s;
}

hash::Digest ExecutionSpec::digest() const {
  const Bytes b = encode();
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/spec");
  return h.update(b).finish();
}

ExecutionSpec ExecutionSpec::from_json(const nlohmann::json &j) {
  const JsonFields f(j, "spec");
  f.only({"framework", "framework_version", "model_program_digest", "dtype", "attention_backend", "dropout",
          "other_rng_use", "optimizer", "grad_clip_max_norm", "grad_accum_microbatches", "batch_size",
          "deterministic_algorithms", "intra_op_threads", "hardware_class", "seed_policy",
          "norm_bucket_resolution", "lr_schedule"});
  ExecutionSpec s;
  s.framework = f.str("framework");
  s.framework_version = f.str("framework_version");
  s.model_program_digest = f.digest("model_program_digest");
  const auto dt = hash::dtype_from_name(f.str("dtype"));
  if (!dt) fail(Status::kInvalidArgument, "spec.dtype '{}' is not a dtype name", f.str("dtype"));
  s.dtype = *dt;
  s.attention_backend = f.str("attention_backend");
  s.dropout = f.f64("dropout");
  s.other_rng_use = f.has("other_rng_use") ? f.boolean("other_rng_use") : false;
  const JsonFields o(f.object("optimizer"), "spec.optimizer");
  const std::string kind = o.str("kind");
  if (kind == "sgd") {
    o.only({"kind", "lr", "momentum", "dampening", "nesterov", "weight_decay"});
    s.optimizer.kind = OptimizerKind::kSgd;
    s.optimizer.momentum = o.has("momentum") ? o.f64("momentum") : 0;
    s.optimizer.dampening = o.has("dampening") ? o.f64("dampening") : 0;
    s.optimizer.nesterov = o.has("nesterov") ? o.boolean("nesterov") : false;
  } else if (kind == "adam" || kind == "adamw") {
    o.only({"kind", "lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad"});
    s.optimizer.kind = kind == "adam" ? OptimizerKind::kAdam : OptimizerKind::kAdamW;
    s.optimizer.beta1 = o.f64("beta1");
    s.optimizer.beta2 = o.f64("beta2");
    s.optimizer.eps = o.f64("eps");
    s.optimizer.amsgrad = o.has("amsgrad") ? o.boolean("amsgrad") : false;
  } else {
    fail(Status::kInvalidArgument, "spec.optimizer.kind '{}' is unknown (sgd, adam or adamw)", kind);
  }
  s.optimizer.lr = o.f64("lr");
  s.optimizer.weight_decay = o.has("weight_decay") ? o.f64("weight_decay") : 0;
  s.grad_clip_max_norm = f.has("grad_clip_max_norm") ? f.f64("grad_clip_max_norm") : 0;
  s.grad_accum_microbatches = f.has("grad_accum_microbatches") ? f.u32("grad_accum_microbatches") : 1;
  s.batch_size = f.u32("batch_size");
  s.deterministic_algorithms = f.has("deterministic_algorithms") ? f.boolean("deterministic_algorithms") : false;
  s.intra_op_threads = f.u32("intra_op_threads");
  s.hardware_class = f.str("hardware_class");
  const JsonFields sp(f.object("seed_policy"), "spec.seed_policy");
  const std::string policy = sp.str("kind");
  if (policy == "per_step") {
    sp.only({"kind", "base_seed"});
    s.seed_policy = SeedPolicyKind::kPerStep;
    s.seed = sp.u64("base_seed");
  } else if (policy == "single_seed") {
    sp.only({"kind", "seed"});
    s.seed_policy = SeedPolicyKind::kSingleSeed;
    s.seed = sp.u64("seed");
  } else if (policy == "none") {
    sp.only({"kind"});
    s.seed_policy = SeedPolicyKind::kNone;
  } else {
    fail(Status::kInvalidArgument, "spec.seed_policy.kind '{}' is unknown (per_step, single_seed or none)", policy);
  }
  s.norm_bucket_resolution = f.u32("norm_bucket_resolution");
  if (f.has("lr_schedule")) s.lr_schedule = schedule_from_json(f.object("lr_schedule"));
  s.validate();
  return s;
}

nlohmann::json ExecutionSpec::to_json() const {
  nlohmann::json o = {{"kind", optimizer_name(optimizer.kind)}, {"lr", optimizer.lr}, {"weight_decay", optimizer.weight_decay}};
  if (optimizer.kind == OptimizerKind::kSgd) {
    o["momentum"] = optimizer.momentum;
    o["dampening"] = optimizer.dampening;
    o["nesterov"] = optimizer.nesterov;
  } else {
    o["beta1"] = optimizer.beta1;
    o["beta2"] = optimizer.beta2;
    o["eps"] = optimizer.eps;
    o["amsgrad"] = optimizer.amsgrad;
  }
  nlohmann::json sp = {{"kind", policy_name(seed_policy)}};
  if (seed_policy == SeedPolicyKind::kPerStep) sp["base_seed"] = seed;
  if (seed_policy == SeedPolicyKind::kSingleSeed) sp["seed"] = seed;
  nlohmann::json j = {{"framework", framework},
          {"framework_version", framework_version},
          {"model_program_digest", model_program_digest.hex()},
          {"dtype", std::string(hash::dtype_name(dtype))},
          {"attention_backend", attention_backend},
          {"dropout", dropout},
          {"other_rng_use", other_rng_use},
          {"optimizer", o},
          {"grad_clip_max_norm", grad_clip_max_norm},
          {"grad_accum_microbatches", grad_accum_microbatches},
          {"batch_size", batch_size},
          {"deterministic_algorithms", deterministic_algorithms},
          {"intra_op_threads", intra_op_threads},
          {"hardware_class", hardware_class},
          {"seed_policy", sp},
          {"norm_bucket_resolution", norm_bucket_resolution}};
  if (!lr_schedule.empty()) j["lr_schedule"] = schedule_to_json(lr_schedule);
  return j;
}

hash::Digest program_digest(ByteView file_bytes) {
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v1/program");
  h.update(file_bytes);
  return h.finish();
}

hash::Digest program_digest_file(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) fail(Status::kIo, "model program '{}': cannot open: {}", path, std::strerror(errno));
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v1/program");
  std::vector<uint8_t> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  const bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad) fail(Status::kIo, "model program '{}': read failed", path);
  return h.finish();
}

}  // namespace pot::commit
