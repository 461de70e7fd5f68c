#include "spec/spec.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <cmath>
#include <set>
#include <string_view>
#include <type_traits>
#include <variant>

#include "codec/canonical.h"
#include "spec/hardware_class.h"
#include "codec/json_fields.h"
#include "common/error.h"
#include "pot/v2/spec.pb.h"

namespace pot::spec {

namespace {

constexpr size_t kMaxLabel = 64;

[[noreturn]] void rule(const std::string &what) { throw Error(Status::kInvalidArgument, "spec: " + what); }

// The arithmetic a spec names: "" (the wire form of native; "native" in
// JSON, where `json` is set) or "pot-repro/1". Another name is kUnsupported:
// a later arithmetic this build cannot compute, named so.
Arithmetic arithmetic_from_name(const std::string &name, const char *where, bool json = false) {
  if (name == (json ? "native" : "")) return Arithmetic::kNative;
  if (name == arithmetic_name(Arithmetic::kRepro1)) return Arithmetic::kRepro1;
  throw Error(Status::kUnsupported,
              fmt::format("{} '{}' is not an arithmetic this build computes (it knows {}native and {})", where,
                          printable_message(name), json ? "" : "the empty string for ",
                          arithmetic_name(Arithmetic::kRepro1)));
}

void label(const std::string &v, const char *name) {
  if (v.empty() || v.size() > kMaxLabel) rule(fmt::format("{} must be 1..{} bytes", name, kMaxLabel));
  if (!is_valid_utf8(v)) rule(fmt::format("{} is not valid UTF-8", name));
}

void finite_range(double v, double lo, double hi, bool hi_open, const char *name) {
  if (!std::isfinite(v) || v < lo || (hi_open ? v >= hi : v > hi))
    rule(fmt::format("{} = {} is outside [{}, {}{}", name, v, lo, hi, hi_open ? ")" : "]"));
}

// One hyper-parameter of OptimizerSpec, by its JSON and proto name.
using FieldPtr = std::variant<double OptimizerSpec::*, bool OptimizerSpec::*, uint32_t OptimizerSpec::*,
                              std::string OptimizerSpec::*>;
struct OptField {
  const char *name;
  FieldPtr ptr;
};

const std::vector<OptField> &all_fields() {
  static const std::vector<OptField> f = {
      {"lr", &OptimizerSpec::lr},
      {"weight_decay", &OptimizerSpec::weight_decay},
      {"maximize", &OptimizerSpec::maximize},
      {"momentum", &OptimizerSpec::momentum},
      {"dampening", &OptimizerSpec::dampening},
      {"nesterov", &OptimizerSpec::nesterov},
      {"beta1", &OptimizerSpec::beta1},
      {"beta2", &OptimizerSpec::beta2},
      {"eps", &OptimizerSpec::eps},
      {"amsgrad", &OptimizerSpec::amsgrad},
      {"rho", &OptimizerSpec::rho},
      {"lr_decay", &OptimizerSpec::lr_decay},
      {"initial_accumulator_value", &OptimizerSpec::initial_accumulator_value},
      {"alpha", &OptimizerSpec::alpha},
      {"centered", &OptimizerSpec::centered},
      {"momentum_decay", &OptimizerSpec::momentum_decay},
      {"decoupled_weight_decay", &OptimizerSpec::decoupled_weight_decay},
      {"ns_a", &OptimizerSpec::ns_a},
      {"ns_b", &OptimizerSpec::ns_b},
      {"ns_c", &OptimizerSpec::ns_c},
      {"ns_steps", &OptimizerSpec::ns_steps},
      {"adjust_lr_fn", &OptimizerSpec::adjust_lr_fn},
  };
  return f;
}

struct KindInfo {
  OptimizerKind kind;
  std::vector<const char *> fields;    // in the proto message's field order
  std::vector<const char *> required;  // in the JSON form (the others default to 0 / false)
};

const std::vector<KindInfo> &kinds() {
  static const std::vector<KindInfo> k = {
      {OptimizerKind::kSgd, {"lr", "momentum", "dampening", "nesterov", "weight_decay", "maximize"}, {"lr"}},
      {OptimizerKind::kAdam,
       {"lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize"},
       {"lr", "beta1", "beta2", "eps"}},
      {OptimizerKind::kAdamW,
       {"lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize"},
       {"lr", "beta1", "beta2", "eps"}},
      {OptimizerKind::kAdadelta, {"lr", "rho", "eps", "weight_decay", "maximize"}, {"lr", "rho", "eps"}},
      {OptimizerKind::kAdagrad,
       {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "maximize"},
       {"lr", "eps"}},
      {OptimizerKind::kRmsProp,
       {"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"},
       {"lr", "alpha", "eps"}},
      {OptimizerKind::kAdamax, {"lr", "beta1", "beta2", "eps", "weight_decay", "maximize"}, {"lr", "beta1", "beta2", "eps"}},
      {OptimizerKind::kNAdam,
       {"lr", "beta1", "beta2", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "maximize"},
       {"lr", "beta1", "beta2", "eps", "momentum_decay"}},
      {OptimizerKind::kRAdam,
       {"lr", "beta1", "beta2", "eps", "weight_decay", "decoupled_weight_decay", "maximize"},
       {"lr", "beta1", "beta2", "eps"}},
      {OptimizerKind::kMuon,
       {"lr", "weight_decay", "momentum", "nesterov", "ns_a", "ns_b", "ns_c", "ns_steps", "eps", "adjust_lr_fn"},
       {"lr", "momentum", "ns_a", "ns_b", "ns_c", "ns_steps", "eps", "adjust_lr_fn"}},
  };
  return k;
}

const KindInfo *kind_info(OptimizerKind k) {
  for (const KindInfo &i : kinds())
    if (i.kind == k) return &i;
  return nullptr;
}

bool has_field(const KindInfo &k, const char *name) {
  for (const char *f : k.fields)
    if (std::strcmp(f, name) == 0) return true;
  return false;
}

bool is_default(const OptimizerSpec &o, const FieldPtr &p) {
  return std::visit(
      [&](auto ptr) {
        using T = std::decay_t<decltype(o.*ptr)>;
        if constexpr (std::is_same_v<T, double>) {
          const double v = o.*ptr;
          return v == 0 && !std::signbit(v);
        } else {
          return o.*ptr == T{};
        }
      },
      p);
}

std::string kind_list() {
  std::string out;
  for (const KindInfo &k : kinds()) {
    if (!out.empty()) out += ", ";
    out += optimizer_name(k.kind);
  }
  return out;
}

nlohmann::json optimizer_to_json(const OptimizerSpec &o) {
  nlohmann::json j = {{"kind", optimizer_name(o.kind)}};
  const KindInfo *k = kind_info(o.kind);
  for (const OptField &f : all_fields()) {
    if (!has_field(*k, f.name)) continue;
    std::visit([&](auto ptr) { j[f.name] = o.*ptr; }, f.ptr);
  }
  return j;
}

OptimizerSpec optimizer_from_json(const nlohmann::json &j, const std::string &where) {
  const codec::JsonFields o(j, where);
  const std::string kind = o.str("kind");
  const KindInfo *k = nullptr;
  for (const KindInfo &i : kinds())
    if (kind == optimizer_name(i.kind)) k = &i;
  if (!k) fail(Status::kInvalidArgument, "{}.kind '{}' is unknown ({})", where, kind, kind_list());
  std::vector<const char *> known{"kind"};
  known.insert(known.end(), k->fields.begin(), k->fields.end());
  o.only(known);
  OptimizerSpec s;
  s.kind = k->kind;
  for (const OptField &f : all_fields()) {
    if (!has_field(*k, f.name)) continue;
    bool required = false;
    for (const char *r : k->required) required = required || std::strcmp(r, f.name) == 0;
    if (!required && !o.has(f.name)) continue;
    std::visit(
        [&](auto ptr) {
          using T = std::decay_t<decltype(s.*ptr)>;
          if constexpr (std::is_same_v<T, double>)
            s.*ptr = o.f64(f.name);
          else if constexpr (std::is_same_v<T, bool>)
            s.*ptr = o.boolean(f.name);
          else if constexpr (std::is_same_v<T, uint32_t>)
            s.*ptr = o.u32(f.name);
          else
            s.*ptr = o.str(f.name);
        },
        f.ptr);
  }
  return s;
}


const char *phase_name(LrPhaseKind k) {
  switch (k) {
    case LrPhaseKind::kStep: return "step";
    case LrPhaseKind::kMultiStep: return "multi_step";
    case LrPhaseKind::kExponential: return "exponential";
    case LrPhaseKind::kCosine: return "cosine";
    case LrPhaseKind::kLinear: return "linear";
    case LrPhaseKind::kConstant: return "constant";
    case LrPhaseKind::kLambda: return "lambda";
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
      case LrPhaseKind::kLambda:
        for (double f : ph.factors) q->mutable_lambda()->add_factors(f);
        break;
    }
  }
  for (uint64_t m : s.milestones) p->add_milestones(m);
  for (double r : s.rates) p->add_rates(r);
  p->set_interval(s.interval);
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
      case v2::LrPhase::kLambda:
        ph.kind = LrPhaseKind::kLambda;
        if (static_cast<size_t>(q.lambda().factors_size()) > kMaxLrTable)
          fail(Status::kMalformed, "spec: an lr_schedule lambda phase has {} factors, at most {}",
               q.lambda().factors_size(), kMaxLrTable);
        ph.factors.assign(q.lambda().factors().begin(), q.lambda().factors().end());
        break;
      default: fail(Status::kMalformed, "spec: an lr_schedule phase has no scheduler kind");
    }
    s.phases.push_back(std::move(ph));
  }
  s.milestones.assign(p.milestones().begin(), p.milestones().end());
  if (static_cast<size_t>(p.rates_size()) > kMaxLrTable)
    fail(Status::kMalformed, "spec: lr_schedule has {} rates, at most {}", p.rates_size(), kMaxLrTable);
  s.rates.assign(p.rates().begin(), p.rates().end());
  s.interval = p.interval();
  return s;
}

std::vector<double> json_table(const nlohmann::json &j, const std::string &where) {
  if (!j.is_array() || j.empty() || j.size() > kMaxLrTable)
    fail(Status::kInvalidArgument, "{} must be an array of 1..{} numbers", where, kMaxLrTable);
  std::vector<double> out;
  out.reserve(j.size());
  for (const auto &v : j) {
    if (!v.is_number()) fail(Status::kInvalidArgument, "{} must hold numbers", where);
    out.push_back(v.get<double>());
  }
  return out;
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
  const codec::JsonFields f(j, "spec.lr_schedule");
  LrSchedule s;
  // 1 (a change after every step) is the encoding's 0.
  if (f.has("interval")) s.interval = f.u32("interval") == 1 ? 0 : f.u32("interval");
  if (f.has("rates")) {
    f.only({"rates", "interval"});
    s.rates = json_table(f.value("rates"), "spec.lr_schedule.rates");
    return s;
  }
  f.only({"phases", "milestones", "interval"});
  const nlohmann::json &phases = f.value("phases");
  if (!phases.is_array() || phases.empty() || phases.size() > kMaxLrPhases)
    fail(Status::kInvalidArgument, "spec.lr_schedule.phases must be an array of 1..{} schedulers", kMaxLrPhases);
  for (size_t i = 0; i < phases.size(); ++i) {
    const codec::JsonFields p(phases[i], fmt::format("spec.lr_schedule.phases[{}]", i));
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
    } else if (kind == "lambda") {
      p.only({"kind", "factors"});
      ph.kind = LrPhaseKind::kLambda;
      ph.factors = json_table(p.value("factors"), p.path("factors"));
    } else {
      fail(Status::kInvalidArgument,
           "{}.kind '{}' is unknown (step, multi_step, exponential, cosine, linear, constant or lambda)",
           p.path("kind"), kind);
    }
    s.phases.push_back(std::move(ph));
  }
  if (f.has("milestones")) s.milestones = json_steps(f.value("milestones"), "spec.lr_schedule.milestones");
  return s;
}

nlohmann::json schedule_to_json(const LrSchedule &s) {
  if (!s.rates.empty()) {
    nlohmann::json j = {{"rates", s.rates}};
    if (s.interval) j["interval"] = s.interval;
    return j;
  }
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
      case LrPhaseKind::kLambda: p["factors"] = ph.factors; break;
    }
    phases.push_back(std::move(p));
  }
  nlohmann::json j = {{"phases", phases}, {"milestones", s.milestones}};
  if (s.interval) j["interval"] = s.interval;
  return j;
}

const char *policy_name(SeedPolicyKind k) {
  switch (k) {
    case SeedPolicyKind::kPerStep: return "per_step";
    case SeedPolicyKind::kSingleSeed: return "single_seed";
    case SeedPolicyKind::kNone: return "none";
  }
  return "?";
}

// The Optimizer oneof, field by field (each message's fields are
// OptimizerSpec's members of the same name).
#define POT_SET(f) m->set_##f(o.f)
void optimizer_to_proto(const OptimizerSpec &o, v2::Optimizer *p) {
  switch (o.kind) {
    case OptimizerKind::kSgd: {
      v2::Sgd *m = p->mutable_sgd();
      POT_SET(lr), POT_SET(momentum), POT_SET(dampening), POT_SET(nesterov), POT_SET(weight_decay), POT_SET(maximize);
      return;
    }
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: {
      v2::Adam *m = o.kind == OptimizerKind::kAdam ? p->mutable_adam() : p->mutable_adamw();
      POT_SET(lr), POT_SET(beta1), POT_SET(beta2), POT_SET(eps), POT_SET(weight_decay), POT_SET(amsgrad),
          POT_SET(maximize);
      return;
    }
    case OptimizerKind::kAdadelta: {
      v2::Adadelta *m = p->mutable_adadelta();
      POT_SET(lr), POT_SET(rho), POT_SET(eps), POT_SET(weight_decay), POT_SET(maximize);
      return;
    }
    case OptimizerKind::kAdagrad: {
      v2::Adagrad *m = p->mutable_adagrad();
      POT_SET(lr), POT_SET(lr_decay), POT_SET(weight_decay), POT_SET(initial_accumulator_value), POT_SET(eps),
          POT_SET(maximize);
      return;
    }
    case OptimizerKind::kRmsProp: {
      v2::RmsProp *m = p->mutable_rmsprop();
      POT_SET(lr), POT_SET(alpha), POT_SET(eps), POT_SET(weight_decay), POT_SET(momentum), POT_SET(centered),
          POT_SET(maximize);
      return;
    }
    case OptimizerKind::kAdamax: {
      v2::Adamax *m = p->mutable_adamax();
      POT_SET(lr), POT_SET(beta1), POT_SET(beta2), POT_SET(eps), POT_SET(weight_decay), POT_SET(maximize);
      return;
    }
    case OptimizerKind::kNAdam: {
      v2::NAdam *m = p->mutable_nadam();
      POT_SET(lr), POT_SET(beta1), POT_SET(beta2), POT_SET(eps), POT_SET(weight_decay), POT_SET(momentum_decay),
          POT_SET(decoupled_weight_decay), POT_SET(maximize);
      return;
    }
    case OptimizerKind::kRAdam: {
      v2::RAdam *m = p->mutable_radam();
      POT_SET(lr), POT_SET(beta1), POT_SET(beta2), POT_SET(eps), POT_SET(weight_decay),
          POT_SET(decoupled_weight_decay), POT_SET(maximize);
      return;
    }
    case OptimizerKind::kMuon: {
      v2::Muon *m = p->mutable_muon();
      POT_SET(lr), POT_SET(weight_decay), POT_SET(momentum), POT_SET(nesterov), POT_SET(ns_a), POT_SET(ns_b),
          POT_SET(ns_c), POT_SET(ns_steps), POT_SET(eps), POT_SET(adjust_lr_fn);
      return;
    }
  }
  fail(Status::kInternal, "optimizer kind {} has no encoding", static_cast<int>(o.kind));
}
#undef POT_SET

#define POT_GET(f) o.f = m.f()
OptimizerSpec optimizer_from_proto(const v2::Optimizer &p, const std::string &where) {
  OptimizerSpec o;
  switch (p.kind_case()) {
    case v2::Optimizer::kSgd: {
      const v2::Sgd &m = p.sgd();
      o.kind = OptimizerKind::kSgd;
      POT_GET(lr), POT_GET(momentum), POT_GET(dampening), POT_GET(nesterov), POT_GET(weight_decay), POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kAdam:
    case v2::Optimizer::kAdamw: {
      const v2::Adam &m = p.has_adam() ? p.adam() : p.adamw();
      o.kind = p.has_adam() ? OptimizerKind::kAdam : OptimizerKind::kAdamW;
      POT_GET(lr), POT_GET(beta1), POT_GET(beta2), POT_GET(eps), POT_GET(weight_decay), POT_GET(amsgrad),
          POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kAdadelta: {
      const v2::Adadelta &m = p.adadelta();
      o.kind = OptimizerKind::kAdadelta;
      POT_GET(lr), POT_GET(rho), POT_GET(eps), POT_GET(weight_decay), POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kAdagrad: {
      const v2::Adagrad &m = p.adagrad();
      o.kind = OptimizerKind::kAdagrad;
      POT_GET(lr), POT_GET(lr_decay), POT_GET(weight_decay), POT_GET(initial_accumulator_value), POT_GET(eps),
          POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kRmsprop: {
      const v2::RmsProp &m = p.rmsprop();
      o.kind = OptimizerKind::kRmsProp;
      POT_GET(lr), POT_GET(alpha), POT_GET(eps), POT_GET(weight_decay), POT_GET(momentum), POT_GET(centered),
          POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kAdamax: {
      const v2::Adamax &m = p.adamax();
      o.kind = OptimizerKind::kAdamax;
      POT_GET(lr), POT_GET(beta1), POT_GET(beta2), POT_GET(eps), POT_GET(weight_decay), POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kNadam: {
      const v2::NAdam &m = p.nadam();
      o.kind = OptimizerKind::kNAdam;
      POT_GET(lr), POT_GET(beta1), POT_GET(beta2), POT_GET(eps), POT_GET(weight_decay), POT_GET(momentum_decay),
          POT_GET(decoupled_weight_decay), POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kRadam: {
      const v2::RAdam &m = p.radam();
      o.kind = OptimizerKind::kRAdam;
      POT_GET(lr), POT_GET(beta1), POT_GET(beta2), POT_GET(eps), POT_GET(weight_decay),
          POT_GET(decoupled_weight_decay), POT_GET(maximize);
      break;
    }
    case v2::Optimizer::kMuon: {
      const v2::Muon &m = p.muon();
      o.kind = OptimizerKind::kMuon;
      POT_GET(lr), POT_GET(weight_decay), POT_GET(momentum), POT_GET(nesterov), POT_GET(ns_a), POT_GET(ns_b),
          POT_GET(ns_c), POT_GET(ns_steps), POT_GET(eps), POT_GET(adjust_lr_fn);
      break;
    }
    default:
      rule(fmt::format("{} is missing or of an unknown kind ({})", where, kind_list()));
  }
  return o;
}
#undef POT_GET

v2::ExecutionSpec to_proto(const ExecutionSpec &s) {
  v2::ExecutionSpec p;
  p.set_framework(s.framework);
  p.set_framework_version(s.framework_version);
  p.set_model_program_digest(s.model_program_digest.bytes.data(), s.model_program_digest.bytes.size());
  p.set_dtype(static_cast<uint32_t>(s.dtype));
  p.set_attention_backend(s.attention_backend);
  p.set_dropout(s.dropout);
  p.set_other_rng_use(s.other_rng_use);
  optimizer_to_proto(s.optimizer, p.mutable_optimizer());
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
  for (const ParamGroup &g : s.param_groups) {
    v2::ParamGroup *q = p.add_param_groups();
    optimizer_to_proto(g.optimizer, q->mutable_optimizer());
    for (const std::string &n : g.params) q->add_params(n);
  }
  p.set_grad_clip_value(s.grad_clip_value);
  if (s.reproducible()) p.set_arithmetic(arithmetic_name(s.arithmetic));
  return p;
}

ExecutionSpec from_proto(const v2::ExecutionSpec &p) {
  ExecutionSpec s;
  s.framework = p.framework();
  s.framework_version = p.framework_version();
  s.model_program_digest = codec::digest_field(p.model_program_digest(), "spec: model_program_digest");
  if (!hash::dtype_valid(static_cast<int>(std::min<uint32_t>(p.dtype(), 256))))
    fail(Status::kMalformed, "spec: dtype code {} is not a pot_dtype", p.dtype());
  s.dtype = static_cast<hash::DType>(p.dtype());
  s.attention_backend = p.attention_backend();
  s.dropout = p.dropout();
  s.other_rng_use = p.other_rng_use();
  s.optimizer = optimizer_from_proto(p.optimizer(), "optimizer");
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
  for (int i = 0; i < p.param_groups_size(); ++i) {
    const v2::ParamGroup &q = p.param_groups(i);
    ParamGroup g;
    g.optimizer = optimizer_from_proto(q.optimizer(), fmt::format("param_groups[{}].optimizer", i));
    g.params.assign(q.params().begin(), q.params().end());
    s.param_groups.push_back(std::move(g));
  }
  s.grad_clip_value = p.grad_clip_value();
  s.arithmetic = arithmetic_from_name(p.arithmetic(), "spec: arithmetic");
  return s;
}

}  // namespace

const char *arithmetic_name(Arithmetic a) { return a == Arithmetic::kRepro1 ? "pot-repro/1" : "native"; }

const char *optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kAdadelta: return "adadelta";
    case OptimizerKind::kAdagrad: return "adagrad";
    case OptimizerKind::kRmsProp: return "rmsprop";
    case OptimizerKind::kAdamax: return "adamax";
    case OptimizerKind::kNAdam: return "nadam";
    case OptimizerKind::kRAdam: return "radam";
    case OptimizerKind::kMuon: return "muon";
  }
  return "?";
}

void OptimizerSpec::validate(const std::string &where) const {
  const KindInfo *k = kind_info(kind);
  if (!k) rule(fmt::format("{} kind is unknown ({})", where, kind_list()));
  const char *name = optimizer_name(kind);
  for (const OptField &f : all_fields())
    if (!has_field(*k, f.name) && !is_default(*this, f.ptr))
      rule(fmt::format("{}.{} does not apply to {}", where, f.name, name));
  const auto field = [&](const char *f) { return where + "." + f; };
  if (!(std::isfinite(lr) && lr > 0)) rule(fmt::format("{} = {} must be finite and > 0", field("lr"), lr));
  finite_range(weight_decay, 0, 1e6, false, field("weight_decay").c_str());
  const auto positive = [&](double v, const char *f) {
    if (!(std::isfinite(v) && v > 0)) rule(fmt::format("{} = {} must be finite and > 0", field(f), v));
  };
  const auto betas = [&] {
    finite_range(beta1, 0, 1, true, field("beta1").c_str());
    finite_range(beta2, 0, 1, true, field("beta2").c_str());
  };
  switch (kind) {
    case OptimizerKind::kSgd:
      finite_range(momentum, 0, 1, true, field("momentum").c_str());
      finite_range(dampening, 0, 1, false, field("dampening").c_str());
      if (nesterov && (momentum <= 0 || dampening != 0))
        rule(fmt::format("{}.nesterov requires momentum > 0 and dampening = 0 (torch.optim.SGD)", where));
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
    case OptimizerKind::kAdamax:
    case OptimizerKind::kRAdam:
      betas();
      positive(eps, "eps");
      break;
    case OptimizerKind::kNAdam:
      betas();
      positive(eps, "eps");
      finite_range(momentum_decay, 0, 1e6, false, field("momentum_decay").c_str());
      break;
    case OptimizerKind::kAdadelta:
      finite_range(rho, 0, 1, false, field("rho").c_str());
      positive(eps, "eps");
      break;
    case OptimizerKind::kAdagrad:
      finite_range(lr_decay, 0, 1e6, false, field("lr_decay").c_str());
      finite_range(initial_accumulator_value, 0, 1e6, false, field("initial_accumulator_value").c_str());
      positive(eps, "eps");
      break;
    case OptimizerKind::kRmsProp:
      finite_range(alpha, 0, 1, false, field("alpha").c_str());
      finite_range(momentum, 0, 1, true, field("momentum").c_str());
      positive(eps, "eps");
      break;
    case OptimizerKind::kMuon:
      finite_range(momentum, 0, 1, true, field("momentum").c_str());
      for (const auto &[v, f] : {std::pair{ns_a, "ns_a"}, {ns_b, "ns_b"}, {ns_c, "ns_c"}})
        finite_range(v, -1e6, 1e6, false, field(f).c_str());
      if (ns_steps < 1 || ns_steps > 99)
        rule(fmt::format("{} = {} is outside 1..99 (torch.optim.Muon)", field("ns_steps"), ns_steps));
      positive(eps, "eps");
      if (adjust_lr_fn != "original" && adjust_lr_fn != "match_rms_adamw" && adjust_lr_fn != "spectral_unclamped")
        rule(fmt::format("{} = '{}' is not original, match_rms_adamw or spectral_unclamped", field("adjust_lr_fn"),
                         printable_message(adjust_lr_fn)));
      break;
  }
}

const OptimizerSpec &ExecutionSpec::group_optimizer(size_t g) const {
  if (g == 0) return optimizer;
  if (g > param_groups.size())
    fail(Status::kOutOfRange, "parameter group {}: the spec has {} groups", g, group_count());
  return param_groups[g - 1].optimizer;
}

size_t ExecutionSpec::group_of(std::string_view name) const {
  for (size_t g = 1; g < group_count(); ++g) {
    const std::vector<std::string> &names = param_groups[g - 1].params;  // strictly increasing (validate)
    if (std::binary_search(names.begin(), names.end(), name, std::less<>())) return g;
  }
  return 0;
}

double ExecutionSpec::group_learning_rate(size_t g, uint64_t step) const {
  return spec::learning_rate(lr_schedule, group_optimizer(g).lr, step);
}

std::string ExecutionSpec::rng_declaration() const {
  return dropout > 0 ? fmt::format("dropout {}", dropout) : std::string("other_rng_use (dropout 0)");
}

void ExecutionSpec::validate() const {
  label(framework, "framework");
  label(framework_version, "framework_version");
  if (dtype != hash::DType::kF16 && dtype != hash::DType::kBF16 && dtype != hash::DType::kF32 &&
      dtype != hash::DType::kF64)
    rule(fmt::format("dtype {} is not a floating-point training dtype (F16, BF16, F32, F64)",
                     hash::dtype_name(dtype)));
  label(attention_backend, "attention_backend");
  finite_range(dropout, 0, 1, true, "dropout");
  if (declares_rng() && seed_policy == SeedPolicyKind::kNone)
    rule(dropout > 0 ? "dropout > 0 draws from the RNG: a seed policy (per_step or single_seed) is required"
                     : "other_rng_use is declared: a seed policy (per_step or single_seed) is required");
  optimizer.validate("optimizer");
  if (param_groups.size() > kMaxParamGroups)
    rule(fmt::format("{} param_groups: at most {}", param_groups.size(), kMaxParamGroups));
  std::set<std::string_view> named;
  for (size_t i = 0; i < param_groups.size(); ++i) {
    const ParamGroup &g = param_groups[i];
    const std::string where = fmt::format("param_groups[{}]", i);
    g.optimizer.validate(where + ".optimizer");
    if (g.params.empty()) rule(where + ".params is empty: a group updates at least one parameter");
    for (size_t j = 0; j < g.params.size(); ++j) {
      const std::string &n = g.params[j];
      if (n.empty() || n.size() > kMaxParamNameBytes || !is_valid_utf8(n))
        rule(fmt::format("{}.params[{}] must be 1..{} bytes of UTF-8", where, j, kMaxParamNameBytes));
      if (j > 0 && !(g.params[j - 1] < n))
        rule(fmt::format("{}.params must be strictly increasing (byte order): '{}' follows '{}'", where,
                         printable_message(n), printable_message(g.params[j - 1])));
      if (!named.insert(n).second)
        rule(fmt::format("{}.params: '{}' is in another group too", where, printable_message(n)));
    }
  }
  finite_range(grad_clip_max_norm, 0, 1e12, false, "grad_clip_max_norm");
  finite_range(grad_clip_value, 0, 1e12, false, "grad_clip_value");
  if (grad_clip_max_norm > 0 && grad_clip_value > 0)
    rule("grad_clip_max_norm and grad_clip_value are both set: a step clips by norm or by value, not both");
  if (grad_accum_microbatches < 1 || grad_accum_microbatches > 65536)
    rule(fmt::format("grad_accum_microbatches = {} is outside 1..65536", grad_accum_microbatches));
  if (batch_size < grad_accum_microbatches || batch_size > (1u << 24))
    rule(fmt::format("batch_size = {} must be in grad_accum_microbatches..2^24", batch_size));
  if (reproducible()) {
    // pot-repro/1 gives the same bits on every machine and thread count:
    // a spec naming either would pin what does not matter.
    if (intra_op_threads != 0)
      rule(fmt::format("intra_op_threads = {}: a {} step gives the same bits on every thread count; leave it out",
                       intra_op_threads, arithmetic_name(arithmetic)));
    if (!hardware_class.empty())
      rule(fmt::format("hardware_class '{}': a {} step gives the same bits on every CPU; leave it out",
                       printable_message(hardware_class), arithmetic_name(arithmetic)));
    if (dtype != hash::DType::kF32 && dtype != hash::DType::kBF16)
      rule(fmt::format("dtype {}: {} defines binary32 (F32) and bfloat16 (BF16) steps only",
                       hash::dtype_name(dtype), arithmetic_name(arithmetic)));
  } else {
    if (intra_op_threads < 1 || intra_op_threads > 1024)
      rule(fmt::format("intra_op_threads = {}: the thread count must be pinned to 1..1024 (it changes the bits)",
                       intra_op_threads));
    label(hardware_class, "hardware_class");
    parse_hardware_class(hardware_class);
  }
  if (seed_policy != SeedPolicyKind::kPerStep && seed_policy != SeedPolicyKind::kSingleSeed &&
      seed_policy != SeedPolicyKind::kNone)
    rule("seed_policy is unknown");
  if (seed_policy == SeedPolicyKind::kNone && seed != 0) rule("seed_policy none carries no seed");
  if (norm_bucket_resolution < 1 || norm_bucket_resolution > 65536)
    rule(fmt::format("norm_bucket_resolution = {} is outside 1..65536", norm_bucket_resolution));
  lr_schedule.validate();
}

double ExecutionSpec::learning_rate(uint64_t step) const { return spec::learning_rate(lr_schedule, optimizer.lr, step); }

Bytes ExecutionSpec::encode() const {
  validate();
  const std::string s = to_proto(*this).SerializeAsString();
  if (s.size() > kMaxSpecBytes)
    fail(Status::kLimit, "spec: {} bytes encoded, at most {} (long rate tables or many parameter names)", s.size(),
         kMaxSpecBytes);
  return Bytes(s.begin(), s.end());
}

ExecutionSpec ExecutionSpec::decode(ByteView b) {
  ExecutionSpec s = from_proto(codec::parse_bounded<v2::ExecutionSpec>(b, kMaxSpecBytes, "spec"));
  s.validate();
  codec::require_canonical(s.encode(), b, "spec");
  return s;
}

hash::Digest ExecutionSpec::digest() const {
  const Bytes b = encode();
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/spec");
  return h.update(b).finish();
}

ExecutionSpec ExecutionSpec::from_json(const nlohmann::json &j) {
  const codec::JsonFields f(j, "spec");
  f.only({"framework", "framework_version", "model_program_digest", "dtype", "attention_backend", "dropout",
          "other_rng_use", "optimizer", "grad_clip_max_norm", "grad_accum_microbatches", "batch_size",
          "deterministic_algorithms", "intra_op_threads", "hardware_class", "seed_policy",
          "norm_bucket_resolution", "lr_schedule", "param_groups", "grad_clip_value", "arithmetic"});
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
  s.optimizer = optimizer_from_json(f.object("optimizer"), "spec.optimizer");
  s.grad_clip_max_norm = f.has("grad_clip_max_norm") ? f.f64("grad_clip_max_norm") : 0;
  s.grad_accum_microbatches = f.has("grad_accum_microbatches") ? f.u32("grad_accum_microbatches") : 1;
  s.batch_size = f.u32("batch_size");
  s.deterministic_algorithms = f.has("deterministic_algorithms") ? f.boolean("deterministic_algorithms") : false;
  s.arithmetic = f.has("arithmetic") ? arithmetic_from_name(f.str("arithmetic"), "spec.arithmetic", true)
                                    : Arithmetic::kNative;
  // Under pot-repro/1 both are left out (validate() says so if not).
  if (!s.reproducible() || f.has("intra_op_threads")) s.intra_op_threads = f.u32("intra_op_threads");
  if (!s.reproducible() || f.has("hardware_class")) s.hardware_class = f.str("hardware_class");
  const codec::JsonFields sp(f.object("seed_policy"), "spec.seed_policy");
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
  if (f.has("param_groups")) {
    const nlohmann::json &groups = f.value("param_groups");
    if (!groups.is_array()) fail(Status::kInvalidArgument, "spec.param_groups must be an array");
    if (groups.size() > kMaxParamGroups)
      fail(Status::kInvalidArgument, "spec.param_groups: {} groups, at most {}", groups.size(), kMaxParamGroups);
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string where = fmt::format("spec.param_groups[{}]", i);
      const codec::JsonFields g(groups[i], where);
      g.only({"optimizer", "params"});
      ParamGroup pg;
      pg.optimizer = optimizer_from_json(g.object("optimizer"), where + ".optimizer");
      const nlohmann::json &names = g.value("params");
      if (!names.is_array()) fail(Status::kInvalidArgument, "{}.params must be an array of strings", where);
      for (const nlohmann::json &n : names) {
        if (!n.is_string()) fail(Status::kInvalidArgument, "{}.params must be an array of strings", where);
        if (pg.params.size() == 65536) fail(Status::kLimit, "{}.params: more than 65536 names", where);
        pg.params.push_back(n.get<std::string>());
      }
      s.param_groups.push_back(std::move(pg));
    }
  }
  s.grad_clip_value = f.has("grad_clip_value") ? f.f64("grad_clip_value") : 0;
  s.encode();  // validates, and refuses a spec too large to be decoded again
  return s;
}

nlohmann::json ExecutionSpec::to_json() const {
  const nlohmann::json o = optimizer_to_json(optimizer);
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
          {"seed_policy", sp},
          {"norm_bucket_resolution", norm_bucket_resolution}};
  if (!lr_schedule.empty()) j["lr_schedule"] = schedule_to_json(lr_schedule);
  if (!param_groups.empty()) {
    nlohmann::json groups = nlohmann::json::array();
    for (const ParamGroup &g : param_groups)
      groups.push_back({{"optimizer", optimizer_to_json(g.optimizer)}, {"params", g.params}});
    j["param_groups"] = groups;
  }
  if (grad_clip_value != 0) j["grad_clip_value"] = grad_clip_value;
  if (reproducible()) {
    j["arithmetic"] = arithmetic_name(arithmetic);
  } else {
    j["intra_op_threads"] = intra_op_threads;
    j["hardware_class"] = hardware_class;
  }
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

}  // namespace pot::spec
