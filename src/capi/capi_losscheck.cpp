// C entry points for the loss-curve checks.
#include <cmath>

#include "capi/firewall.h"
#include "losscheck/loss_checks.h"

using namespace pot;
using namespace pot::capi;

struct pot_losscheck_params {
  losscheck::LossCheckParams p;
};

struct pot_losscheck_report {
  std::vector<losscheck::LossFlag> flags;
};

static_assert(POT_LOSS_NO_DECREASE == static_cast<int>(losscheck::LossFlagKind::kNoDecrease));
static_assert(POT_LOSS_IMPLAUSIBLE_RATE == static_cast<int>(losscheck::LossFlagKind::kImplausibleRate));
static_assert(POT_LOSS_FROZEN == static_cast<int>(losscheck::LossFlagKind::kFrozen));
static_assert(POT_LOSS_REGRESSION == static_cast<int>(losscheck::LossFlagKind::kRegression));
static_assert(POT_LOSS_NON_FINITE == static_cast<int>(losscheck::LossFlagKind::kNonFinite));

namespace {

uint64_t integral(double v, const char *name) {
  if (!(v >= 0 && v <= 9007199254740992.0) || std::floor(v) != v)
    fail(Status::kInvalidArgument, "{} needs a non-negative integer, not {}", name, v);
  return static_cast<uint64_t>(v);
}

// The field a parameter names, as a double (integers converted exactly).
double get(const losscheck::LossCheckParams &p, int param) {
  switch (param) {
    case POT_LOSSCHECK_WINDOW: return static_cast<double>(p.window);
    case POT_LOSSCHECK_DECREASE_TOLERANCE: return p.decrease_tolerance;
    case POT_LOSSCHECK_DECREASE_SIGMAS: return p.decrease_sigmas;
    case POT_LOSSCHECK_MAX_DROP: return p.max_drop;
    case POT_LOSSCHECK_FROZEN_MIN_STEPS: return static_cast<double>(p.frozen_min_steps);
    case POT_LOSSCHECK_FROZEN_EPSILON: return p.frozen_epsilon;
    case POT_LOSSCHECK_REGRESSION_SIGMAS: return p.regression_sigmas;
    case POT_LOSSCHECK_REGRESSION_MIN_INCREASE: return p.regression_min_increase;
    case POT_LOSSCHECK_MAX_FLAGS: return static_cast<double>(p.max_flags);
  }
  fail(Status::kInvalidArgument, "{} is not a pot_losscheck_param", param);
}

void set(losscheck::LossCheckParams &p, int param, double v) {
  switch (param) {
    case POT_LOSSCHECK_WINDOW: p.window = integral(v, "window"); return;
    case POT_LOSSCHECK_DECREASE_TOLERANCE: p.decrease_tolerance = v; return;
    case POT_LOSSCHECK_DECREASE_SIGMAS: p.decrease_sigmas = v; return;
    case POT_LOSSCHECK_MAX_DROP: p.max_drop = v; return;
    case POT_LOSSCHECK_FROZEN_MIN_STEPS: p.frozen_min_steps = integral(v, "frozen_min_steps"); return;
    case POT_LOSSCHECK_FROZEN_EPSILON: p.frozen_epsilon = v; return;
    case POT_LOSSCHECK_REGRESSION_SIGMAS: p.regression_sigmas = v; return;
    case POT_LOSSCHECK_REGRESSION_MIN_INCREASE: p.regression_min_increase = v; return;
    case POT_LOSSCHECK_MAX_FLAGS: p.max_flags = integral(v, "max_flags"); return;
  }
  fail(Status::kInvalidArgument, "{} is not a pot_losscheck_param", param);
}

}  // namespace

extern "C" {

pot_status pot_losscheck_params_new(pot_losscheck_params **out, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = new pot_losscheck_params{};
  });
}

void pot_losscheck_params_free(pot_losscheck_params *params) { delete params; }

pot_status pot_losscheck_params_set(pot_losscheck_params *params, pot_losscheck_param param, double value,
                                    pot_error **err) {
  return guard(err, [&] {
    losscheck::LossCheckParams next = need(params, "params")->p;
    set(next, enum_arg(param), value);
    losscheck::validate(next);  // all or nothing
    params->p = next;
  });
}

pot_status pot_losscheck_params_get(double *out, const pot_losscheck_params *params, pot_losscheck_param param,
                                    pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = get(need(params, "params")->p, enum_arg(param));
  });
}

pot_status pot_losscheck_run(pot_losscheck_report **out, const double *losses, size_t losses_len,
                             const pot_losscheck_params *params, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    if (losses_len) need(losses, "losses");
    const losscheck::LossCheckParams p = params ? params->p : losscheck::LossCheckParams{};
    auto flags = losscheck::check_loss_curve(std::vector<double>(losses, losses + losses_len), p);
    *out = new pot_losscheck_report{std::move(flags)};
  });
}

void pot_losscheck_report_free(pot_losscheck_report *report) { delete report; }

size_t pot_losscheck_report_count(const pot_losscheck_report *report) { return report ? report->flags.size() : 0; }

pot_status pot_losscheck_report_flag(pot_loss_flag_kind *kind, uint64_t *first_step, uint64_t *last_step,
                                     const char **message, const pot_losscheck_report *report, size_t index,
                                     pot_error **err) {
  return guard(err, [&] {
    need(report, "report");
    if (index >= report->flags.size())
      fail(Status::kOutOfRange, "flag {} of a report of {}", index, report->flags.size());
    const losscheck::LossFlag &f = report->flags[index];
    if (kind) *kind = static_cast<pot_loss_flag_kind>(f.kind);
    if (first_step) *first_step = f.first_step;
    if (last_step) *last_step = f.last_step;
    if (message) *message = f.message.c_str();
  });
}

const char *pot_loss_flag_name(pot_loss_flag_kind kind) {
  const int k = enum_arg(kind);
  if (k < 0 || k > 4) return "unknown";
  return losscheck::loss_flag_name(static_cast<losscheck::LossFlagKind>(k));
}

}  // extern "C"
