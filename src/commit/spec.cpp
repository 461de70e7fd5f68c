#include "commit/spec.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <cmath>

#include "commit/canonical.h"
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
  if (seed_policy != SeedPolicyKind::kPerStep && seed_policy != SeedPolicyKind::kSingleSeed &&
      seed_policy != SeedPolicyKind::kNone)
    rule("seed_policy is unknown");
  if (seed_policy == SeedPolicyKind::kNone && seed != 0) rule("seed_policy none carries no seed");
  if (norm_bucket_resolution < 1 || norm_bucket_resolution > 65536)
    rule(fmt::format("norm_bucket_resolution = {} is outside 1..65536", norm_bucket_resolution));
}

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
  hash::begin_tagged(h, "pot/v1/spec");
  return h.update(b).finish();
}

ExecutionSpec ExecutionSpec::from_json(const nlohmann::json &j) {
  const JsonFields f(j, "spec");
  f.only({"framework", "framework_version", "model_program_digest", "dtype", "attention_backend", "dropout",
          "other_rng_use", "optimizer", "grad_clip_max_norm", "grad_accum_microbatches", "batch_size",
          "deterministic_algorithms", "intra_op_threads", "hardware_class", "seed_policy",
          "norm_bucket_resolution"});
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
  return {{"framework", framework},
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
