#include "spec/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

// Each expression below is the one torch 1.13's lr_scheduler.py evaluates,
// operand for operand, in Python's left-to-right order (`a * b / 2` is
// `(a * b) / 2`), with Python's int -> float conversions written out. The
// whole build compiles with -ffp-contract=off: a fused multiply-add would
// round once where Python rounds twice.

namespace pot::spec {

namespace {

constexpr double kPi = 3.141592653589793;  // math.pi

[[noreturn]] void rule(size_t phase, const std::string &what) {
  throw Error(Status::kInvalidArgument, fmt::format("spec.lr_schedule.phases[{}]: {}", phase, what));
}

void in_range(double v, double lo, bool lo_open, double hi, size_t phase, const char *name) {
  if (!std::isfinite(v) || (lo_open ? v <= lo : v < lo) || v > hi)
    rule(phase, fmt::format("{} = {} is outside {}{}, {}]", name, v, lo_open ? "(" : "[", lo, hi));
}

// LambdaLR's get_lr at local epoch e: base_lr * lmbda(e), the table's last
// factor past its end.
double lambda_rate(const LrPhase &p, double base, uint64_t e) {
  return base * p.factors[static_cast<size_t>(std::min<uint64_t>(e, p.factors.size() - 1))];
}

// Each value of a table is finite and >= +0 (its sign bit clear).
void check_table(const std::vector<double> &v, const std::string &where) {
  if (v.empty() || v.size() > kMaxLrTable)
    fail(Status::kInvalidArgument, "{} must hold 1..{} values, not {}", where, kMaxLrTable, v.size());
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || std::signbit(v[i]))
      fail(Status::kInvalidArgument, "{}[{}] = {}: each value is finite and >= +0", where, i, v[i]);
}

// The rate after SequentialLR's step(0) of a phase: its closed form at
// epoch 0 (_get_closed_form_lr), from the base rate.
double first_rate(const LrPhase &p, double base) {
  switch (p.kind) {
    case LrPhaseKind::kStep:         // base_lr * gamma ** (0 // step_size)
    case LrPhaseKind::kExponential:  // base_lr * gamma ** 0
    case LrPhaseKind::kMultiStep:    // base_lr * gamma ** bisect_right(milestones, 0); milestones >= 1
      return base * std::pow(p.gamma, 0.0);
    case LrPhaseKind::kCosine:  // eta_min + (base_lr - eta_min) * (1 + cos(pi * 0 / T_max)) / 2
      return p.eta_min + (base - p.eta_min) * (1 + std::cos(kPi * 0.0 / static_cast<double>(p.t_max))) / 2;
    case LrPhaseKind::kLinear:  // base_lr * (start + (end - start) * min(total, 0) / total)
      return base * (p.start_factor + (p.end_factor - p.start_factor) * 0.0 / static_cast<double>(p.total_iters));
    case LrPhaseKind::kConstant:  // base_lr * (factor + (0 >= total) * (1 - factor)), total >= 1
      return base * (p.factor + 0.0 * (1 - p.factor));
    case LrPhaseKind::kLambda:  // LambdaLR has no closed form: get_lr() at last_epoch 0
      return lambda_rate(p, base, 0);
  }
  return base;
}

// The rate of the first phase after its constructor's step (get_lr at
// last_epoch 0, applied to the optimizer's rate).
double initial_rate(const LrPhase &p, double lr) {
  switch (p.kind) {
    case LrPhaseKind::kLinear: return lr * p.start_factor;
    case LrPhaseKind::kConstant: return lr * p.factor;
    case LrPhaseKind::kLambda: return lambda_rate(p, lr, 0);
    default: return lr;
  }
}

// get_lr at local epoch e >= 1 (chainable form), from the current rate.
double next_rate(const LrPhase &p, double lr, uint64_t e, double base) {
  switch (p.kind) {
    case LrPhaseKind::kStep:
      return e % p.step_size != 0 ? lr : lr * p.gamma;
    case LrPhaseKind::kMultiStep: {
      const auto range = std::equal_range(p.milestones.begin(), p.milestones.end(), e);
      const auto c = range.second - range.first;
      return c == 0 ? lr : lr * std::pow(p.gamma, static_cast<double>(c));  // gamma ** count (float ** int)
    }
    case LrPhaseKind::kExponential:
      return lr * p.gamma;
    case LrPhaseKind::kCosine: {
      const uint64_t T = p.t_max;
      const double Td = static_cast<double>(T);
      if (e >= T + 1 && (e - 1 - T) % (2 * T) == 0)  // (last_epoch - 1 - T_max) % (2 * T_max) == 0
        return lr + (base - p.eta_min) * (1 - std::cos(kPi / Td)) / 2;
      return (1 + std::cos(kPi * static_cast<double>(e) / Td)) / (1 + std::cos(kPi * static_cast<double>(e - 1) / Td)) *
                 (lr - p.eta_min) +
             p.eta_min;
    }
    case LrPhaseKind::kLinear: {
      if (e > p.total_iters) return lr;
      const double d = p.end_factor - p.start_factor;
      return lr * (1. + d / (static_cast<double>(p.total_iters) * p.start_factor + static_cast<double>(e - 1) * d));
    }
    case LrPhaseKind::kConstant:
      return e == p.total_iters ? lr * (1.0 / p.factor) : lr;
    case LrPhaseKind::kLambda:  // not chainable: from the base rate, not the current one
      return lambda_rate(p, base, e);
  }
  return lr;
}

}  // namespace

bool LrPhase::operator==(const LrPhase &o) const {
  return kind == o.kind && step_size == o.step_size && milestones == o.milestones && gamma == o.gamma &&
         t_max == o.t_max && eta_min == o.eta_min && start_factor == o.start_factor && end_factor == o.end_factor &&
         factor == o.factor && total_iters == o.total_iters && factors == o.factors;
}

namespace {

// Each kind uses its own fields; any other must be left at zero, so one
// schedule has one encoding.
bool uses_gamma(LrPhaseKind k) {
  return k == LrPhaseKind::kStep || k == LrPhaseKind::kMultiStep || k == LrPhaseKind::kExponential;
}

bool sets_a_foreign_field(const LrPhase &p) {
  const LrPhaseKind k = p.kind;
  return (p.step_size != 0 && k != LrPhaseKind::kStep) || (!p.milestones.empty() && k != LrPhaseKind::kMultiStep) ||
         (p.gamma != 0 && !uses_gamma(k)) || ((p.t_max != 0 || p.eta_min != 0) && k != LrPhaseKind::kCosine) ||
         ((p.start_factor != 0 || p.end_factor != 0) && k != LrPhaseKind::kLinear) ||
         (p.factor != 0 && k != LrPhaseKind::kConstant) ||
         (p.total_iters != 0 && k != LrPhaseKind::kLinear && k != LrPhaseKind::kConstant) ||
         (!p.factors.empty() && k != LrPhaseKind::kLambda);
}

// Phase i's own fields, by its kind.
void validate_phase(const LrPhase &p, size_t i) {
  if (sets_a_foreign_field(p)) rule(i, "a field of another scheduler kind is set");
  if (uses_gamma(p.kind)) in_range(p.gamma, 0, true, 1, i, "gamma");
  switch (p.kind) {
    case LrPhaseKind::kStep:
      if (p.step_size < 1) rule(i, "step_size must be >= 1");
      break;
    case LrPhaseKind::kMultiStep:
      if (p.milestones.empty() || p.milestones.size() > kMaxLrMilestones)
        rule(i, fmt::format("multi_step needs 1..{} milestones", kMaxLrMilestones));
      for (size_t k = 0; k < p.milestones.size(); ++k)
        if (p.milestones[k] < 1 || (k > 0 && p.milestones[k] < p.milestones[k - 1]))
          rule(i, "multi_step milestones must be non-decreasing and >= 1");
      break;
    case LrPhaseKind::kExponential: break;
    case LrPhaseKind::kCosine:
      // T_max bounded so that cos(pi * (e - 1) / T_max) = -1 (a division
      // by zero in torch's formula) happens only where torch's restart
      // branch is taken instead.
      if (p.t_max < 1 || p.t_max > (1u << 24)) rule(i, fmt::format("t_max = {} is outside 1..2^24", p.t_max));
      in_range(p.eta_min, 0, false, 1e6, i, "eta_min");
      break;
    case LrPhaseKind::kLinear:
      in_range(p.start_factor, 0, true, 1, i, "start_factor");
      in_range(p.end_factor, 0, false, 1, i, "end_factor");
      if (p.total_iters < 1) rule(i, "total_iters must be >= 1");
      break;
    case LrPhaseKind::kConstant:
      in_range(p.factor, 0, true, 1, i, "factor");
      if (p.total_iters < 1) rule(i, "total_iters must be >= 1");
      break;
    case LrPhaseKind::kLambda: check_table(p.factors, fmt::format("spec.lr_schedule.phases[{}].factors", i)); break;
    default: rule(i, "unknown scheduler kind");
  }
}

}  // namespace

void LrSchedule::validate() const {
  if (interval == 1)
    fail(Status::kInvalidArgument, "spec.lr_schedule.interval = 1 is written as 0 (a change after every step)");
  if (interval != 0 && empty())
    fail(Status::kInvalidArgument, "spec.lr_schedule.interval = {} without phases or rates: a constant rate has "
         "no interval", interval);
  if (!rates.empty()) {
    if (!phases.empty() || !milestones.empty())
      fail(Status::kInvalidArgument,
           "spec.lr_schedule: rates set by hand are the whole schedule: no phases or milestones beside them");
    check_table(rates, "spec.lr_schedule.rates");
    return;
  }
  if (phases.size() > kMaxLrPhases)
    fail(Status::kInvalidArgument, "spec.lr_schedule: {} phases, at most {}", phases.size(), kMaxLrPhases);
  if (milestones.size() + 1 != phases.size() && !(phases.empty() && milestones.empty()))
    fail(Status::kInvalidArgument,
         "spec.lr_schedule: {} phases need {} milestones (the step counts where the next phase starts), not {}",
         phases.size(), phases.empty() ? 0 : phases.size() - 1, milestones.size());
  for (size_t i = 0; i < milestones.size(); ++i)
    if (milestones[i] < 1 || (i > 0 && milestones[i] <= milestones[i - 1]))
      fail(Status::kInvalidArgument, "spec.lr_schedule.milestones must be strictly increasing and >= 1 ({} at {})",
           milestones[i], i);
  for (size_t i = 0; i < phases.size(); ++i) validate_phase(phases[i], i);
}

LrSequence::LrSequence(const LrSchedule &schedule, double base_lr) : s_(schedule), base_(base_lr) {}

double LrSequence::next() {
  // Step t trains at scheduler step floor((t - 1) / interval) + 1's rate.
  if (step_ % (s_.interval ? s_.interval : 1) == 0) advance();
  ++step_;
  return lr_;
}

void LrSequence::advance() {
  if (!s_.rates.empty()) {  // set by hand: the table, whatever the group's base
    lr_ = s_.rates[static_cast<size_t>(std::min<uint64_t>(epoch_, s_.rates.size() - 1))];
  } else if (epoch_ == 0) {
    lr_ = s_.phases.empty() ? base_ : initial_rate(s_.phases[0], base_);
  } else if (!s_.phases.empty()) {
    // SequentialLR.step(): last_epoch = epoch_; idx = bisect_right(milestones, epoch_)
    const uint64_t e = epoch_;
    const size_t k = static_cast<size_t>(std::upper_bound(s_.milestones.begin(), s_.milestones.end(), e) -
                                         s_.milestones.begin());
    if (k > 0 && s_.milestones[k - 1] == e)
      lr_ = first_rate(s_.phases[k], base_);
    else
      lr_ = next_rate(s_.phases[k], lr_, k > 0 ? e - s_.milestones[k - 1] : e, base_);
  }
  ++epoch_;
  if (!std::isfinite(lr_) || std::signbit(lr_))
    fail(Status::kInvalidArgument, "spec.lr_schedule: the rate of step {} is {}: a rate is finite and >= +0",
         step_ + 1, lr_);
}

double learning_rate(const LrSchedule &schedule, double base_lr, uint64_t step) {
  double r = 0;
  learning_rates(schedule, base_lr, step, 1, &r);
  return r;
}

void learning_rates(const LrSchedule &schedule, double base_lr, uint64_t first, size_t n, double *out) {
  schedule.validate();  // the walk divides by step sizes and periods it must not trust
  if (first < 1) fail(Status::kInvalidArgument, "learning rates: steps start at 1, not {}", first);
  if (first > kMaxLrStep || n > kMaxLrStep || first + n - 1 > kMaxLrStep)
    fail(Status::kOutOfRange, "learning rates of steps {}..{}: the schedule is evaluated up to step {}", first,
         first + n - 1, kMaxLrStep);
  if (schedule.empty()) {  // a constant rate: nothing to walk
    if (!std::isfinite(base_lr) || std::signbit(base_lr))
      fail(Status::kInvalidArgument, "learning rates: the rate {} is not finite and >= +0", base_lr);
    std::fill(out, out + n, base_lr);
    return;
  }
  LrSequence seq(schedule, base_lr);
  for (uint64_t t = 1; t < first; ++t) seq.next();
  // The window is walked once to validate and once to write, so that a rate
  // refused inside it leaves out untouched.
  LrSequence check = seq;
  for (size_t i = 0; i < n; ++i) check.next();
  for (size_t i = 0; i < n; ++i) out[i] = seq.next();
}

}  // namespace pot::spec
