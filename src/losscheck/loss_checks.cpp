#include "losscheck/loss_checks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include "common/error.h"

namespace pot::losscheck {

namespace {

// 1.4826 * MAD estimates the standard deviation of normal noise; the MAD
// itself ignores the spikes the regression rule looks for.
constexpr double kMadToSigma = 1.4826;

// sd(median of w normal samples) ~= kMedianSe * sd / sqrt(w) (sqrt(pi / 2)).
constexpr double kMedianSe = 1.2533;

// Median of v[0..m), m >= 1, sorted. Halving each middle value before adding
// keeps the mean of two huge values finite.
double median_of_sorted(const double *v, size_t m) {
  return m % 2 ? v[m / 2] : v[m / 2 - 1] / 2 + v[m / 2] / 2;
}

// Median of |v[i] - median| over v[0..m), m >= 1, sorted. The deviations of
// the values below the median, walked downwards, and of the others, walked
// upwards, are two ascending lists: merging them up to the middle gives the
// median deviation in O(m) without a sort or an allocation.
double mad_of_sorted(const double *v, size_t m) {
  const double med = median_of_sorted(v, m);
  size_t lo = static_cast<size_t>(std::lower_bound(v, v + m, med) - v);
  size_t hi = lo;
  double prev = 0, cur = 0;
  for (size_t taken = 0; taken <= m / 2; ++taken) {
    prev = cur;
    const bool left = lo > 0 && (hi == m || med - v[lo - 1] <= v[hi] - med);
    cur = left ? med - v[--lo] : v[hi++] - med;
  }
  return m % 2 ? cur : prev / 2 + cur / 2;
}

// The losses of a sliding window, kept sorted: the median is O(1), the MAD
// O(window), and nothing is allocated after construction. Only finite
// values enter, so equal values are interchangeable and erase-by-value is
// exact.
class SortedWindow {
 public:
  explicit SortedWindow(size_t capacity) { v_.reserve(capacity); }
  void clear() { v_.clear(); }
  size_t size() const { return v_.size(); }
  void insert(double x) { v_.insert(std::upper_bound(v_.begin(), v_.end(), x), x); }
  // x must have been inserted and not yet erased.
  void erase(double x) { v_.erase(std::lower_bound(v_.begin(), v_.end(), x)); }
  double median() const { return median_of_sorted(v_.data(), v_.size()); }
  double mad() const { return mad_of_sorted(v_.data(), v_.size()); }

 private:
  std::vector<double> v_;
};

// The flags of one rule, produced in step order. Only the first `cap` are
// kept: no more of one kind can reach the capped output. The rest are only
// counted, and their messages never formatted, so a hostile sequence costs
// neither memory nor formatting time.
class FlagSink {
 public:
  FlagSink(LossFlagKind kind, uint64_t cap) : kind_(kind), cap_(cap) {}

  template <typename... Args>
  void add(size_t first_index, size_t last_index, fmt::format_string<Args...> f, Args &&...args) {
    if (flags_.size() >= cap_) {
      ++dropped_;
      return;
    }
    flags_.push_back(LossFlag{kind_, static_cast<uint64_t>(first_index) + 1,
                              static_cast<uint64_t>(last_index) + 1,
                              fmt::format(f, std::forward<Args>(args)...)});
  }
  std::vector<LossFlag> &flags() { return flags_; }
  uint64_t dropped() const { return dropped_; }

 private:
  LossFlagKind kind_;
  uint64_t cap_;
  std::vector<LossFlag> flags_;
  uint64_t dropped_ = 0;
};

// "+12.5%" relative to |from|, or the plain difference when from is 0 (no
// scale to be relative to).
std::string change(double from, double to) {
  if (from == 0) return fmt::format("{:+.6g}", to - from);
  return fmt::format("{:+.4g}%", 100 * (to - from) / std::fabs(from));
}

// Steps [first, last] as "step 7" or "steps 7-9" (indices are 0-based).
std::string steps(size_t first, size_t last) {
  if (first == last) return fmt::format("step {}", first + 1);
  return fmt::format("steps {}-{}", first + 1, last + 1);
}

// One flag per maximal run of consecutive non-finite losses.
void check_non_finite(const std::vector<double> &losses, FlagSink &out) {
  const size_t n = losses.size();
  size_t i = 0;
  while (i < n) {
    if (std::isfinite(losses[i])) {
      ++i;
      continue;
    }
    uint64_t nan = 0, pos = 0, neg = 0;
    size_t j = i;
    for (; j < n && !std::isfinite(losses[j]); ++j) {
      if (std::isnan(losses[j]))
        ++nan;
      else if (losses[j] > 0)
        ++pos;
      else
        ++neg;
    }
    const std::array<std::pair<uint64_t, const char *>, 3> kinds{
        {{nan, "nan"}, {pos, "+inf"}, {neg, "-inf"}}};
    std::string what;
    for (const auto &[count, name] : kinds) {
      if (!count) continue;
      if (!what.empty()) what += ", ";
      what += j - i == 1 ? std::string(name) : fmt::format("{} {}", count, name);
    }
    out.add(i, j - 1, "loss is not finite at {} ({})", steps(i, j - 1), what);
    i = j;
  }
}

// One flag per maximal run of at least frozen_min_steps finite losses, each
// within frozen_epsilon of the one before. Comparing neighbours (not the
// run's first value) makes the runs a partition of the sequence: one pass,
// no ambiguity about where a run starts.
void check_frozen(const std::vector<double> &losses, const LossCheckParams &p, FlagSink &out) {
  const size_t n = losses.size();
  size_t i = 0;
  while (i < n) {
    if (!std::isfinite(losses[i])) {
      ++i;
      continue;
    }
    double lo = losses[i], hi = losses[i];
    size_t j = i + 1;
    for (; j < n && std::isfinite(losses[j]) &&
           std::fabs(losses[j] - losses[j - 1]) <= p.frozen_epsilon;
         ++j) {
      lo = std::min(lo, losses[j]);
      hi = std::max(hi, losses[j]);
    }
    if (j - i >= p.frozen_min_steps) {
      // Exact values ({}), since the point is that they (nearly) repeat.
      if (lo == hi)
        out.add(i, j - 1,
                "loss is {} at each of the {} {} (runs of {} or more equal steps are flagged)", lo,
                j - i, steps(i, j - 1), p.frozen_min_steps);
      else
        out.add(i, j - 1,
                "loss stays within [{}, {}] over the {} {}, each within {} of the step before "
                "(runs of {} or more such steps are flagged)",
                lo, hi, j - i, steps(i, j - 1), p.frozen_epsilon, p.frozen_min_steps);
    }
    i = j;
  }
}

// Robust sd of the step-to-step noise of v (in step order): 1.4826 * MAD of
// the first differences, / sqrt(2) since a difference carries the noise of
// two steps. Differences cancel the trend (the MAD is taken about their
// median, which absorbs a steady slope) and a level shift inside the window
// moves a single difference, so neither passes for noise, as they would with
// the MAD of the values themselves. 0 for fewer than two values.
double noise_sd(const std::vector<double> &v) {
  if (v.size() < 2) return 0;
  std::vector<double> d(v.size() - 1);
  for (size_t i = 0; i + 1 < v.size(); ++i) d[i] = v[i + 1] - v[i];
  std::sort(d.begin(), d.end());
  return kMadToSigma * mad_of_sorted(d.data(), d.size()) / std::sqrt(2.0);
}

// sqrt(a^2 + b^2) for a, b >= 0 without overflow. Not std::hypot: its
// rounding is left to the platform's libm, and every verifier must get the
// same flags; + - * / and sqrt are correctly rounded everywhere.
double norm2(double a, double b) {
  const double m = std::max(a, b);
  if (m == 0 || !std::isfinite(m)) return m;
  return m * std::sqrt((a / m) * (a / m) + (b / m) * (b / m));
}

// Compares the median of the first `window` finite losses with the median of
// the last `window` ones. Non-finite losses are skipped here (they are flagged
// on their own): this rule compares the run's start and end levels, which a
// gap does not change. Needs 2 * window finite losses so the two windows are
// disjoint.
void check_no_decrease(const std::vector<double> &losses, const LossCheckParams &p, FlagSink &out) {
  const size_t n = losses.size(), w = p.window;
  std::vector<double> head, tail;
  head.reserve(w);
  tail.reserve(w);
  size_t head_first = n, i = 0;
  for (; i < n && head.size() < w; ++i) {
    if (!std::isfinite(losses[i])) continue;
    if (head.empty()) head_first = i;
    head.push_back(losses[i]);
  }
  if (head.size() < w) return;  // fewer than window finite losses
  const size_t head_last = i - 1;
  size_t tail_last = n, j = n;
  for (; j > i && tail.size() < w; --j) {
    if (!std::isfinite(losses[j - 1])) continue;
    if (tail.empty()) tail_last = j - 1;
    tail.push_back(losses[j - 1]);
  }
  if (tail.size() < w) return;  // fewer than 2 * window finite losses
  const size_t tail_first = j;
  const double first_noise = noise_sd(head), last_noise = noise_sd(tail);
  std::sort(head.begin(), head.end());
  std::sort(tail.begin(), tail.end());
  const double first = median_of_sorted(head.data(), w), last = median_of_sorted(tail.data(), w);
  const double se = kMedianSe / std::sqrt(static_cast<double>(w)) * norm2(first_noise, last_noise);
  const double relative = p.decrease_tolerance * std::fabs(first);
  const double noise = p.decrease_sigmas * se;
  if (first - last > std::max(relative, noise)) return;
  out.add(head_first, tail_last,
          "median loss went from {:.6g} ({}) to {:.6g} ({}), a change of {}; a decrease of more "
          "than {:.6g} is expected (the larger of {:.6g}% of the first median = {:.6g} and {:.6g} "
          "standard errors of the medians' difference = {:.6g})",
          first, steps(head_first, head_last), last, steps(tail_first, tail_last),
          change(first, last), std::max(relative, noise), 100 * p.decrease_tolerance, relative,
          p.decrease_sigmas, noise);
}

// A run of consecutive flagged steps of one window rule, described by its
// first step (where the rule first fired) and its most extreme step.
struct Run {
  bool open = false;
  size_t first = 0, last = 0;
  double x = 0, median = 0, other = 0, threshold = 0;  // at the first step
  size_t extreme = 0;                                  // index of the most extreme loss
};

void extend(Run &r, size_t i, double x, double median, double other, double threshold,
            bool more_extreme) {
  if (!r.open) {
    r = Run{true, i, i, x, median, other, threshold, i};
    return;
  }
  r.last = i;
  if (more_extreme) r.extreme = i;
}

void close_rate(Run &r, const LossCheckParams &p, size_t w, size_t after_len, FlagSink &out) {
  if (!r.open) return;
  r.open = false;
  const size_t s = r.first;
  std::string tail;
  if (r.last > r.first)
    tail = fmt::format("; each of the {} {} is that far below the median of the {} steps before it",
                       r.last - r.first + 1, steps(r.first, r.last), w);
  out.add(s, r.last,
          "loss fell to {:.6g} at step {}, {} from the median {:.6g} of {}, and the median of {} "
          "is {:.6g} ({}); a fall of more than {:.6g}% (below {:.6g}) is flagged as implausibly "
          "fast{}",
          r.x, s + 1, change(r.median, r.x), r.median, steps(s - w, s - 1),
          steps(s, s + after_len - 1), r.other, change(r.median, r.other), 100 * p.max_drop,
          r.threshold, tail);
}

void close_regression(Run &r, const std::vector<double> &losses, const LossCheckParams &p, size_t w,
                      FlagSink &out) {
  if (!r.open) return;
  r.open = false;
  const size_t s = r.first;
  std::string tail;
  if (r.last > r.first)
    tail =
        fmt::format("; each of the {} {} exceeds its threshold, the highest loss {:.6g} at step {}",
                    r.last - r.first + 1, steps(r.first, r.last), losses[r.extreme], r.extreme + 1);
  out.add(s, r.last,
          "loss {:.6g} at step {} is {} from the median {:.6g} of {}, above the threshold {:.6g} "
          "(the median plus the larger of {:.6g} robust sd = {:.6g} and {:.6g}% of |median|){}",
          r.x, s + 1, change(r.median, r.x), r.median, steps(s - w, s - 1), r.threshold,
          p.regression_sigmas, p.regression_sigmas * r.other, 100 * p.regression_min_increase,
          tail);
}

// The rate and regression rules over one stretch [a, b) of finite losses.
// Step i is judged against the window of the `w` steps before it, so the
// first `w` steps of a stretch are never judged: there is no level to compare
// them with.
void scan_stretch(const std::vector<double> &losses, size_t a, size_t b, const LossCheckParams &p,
                  SortedWindow &before, SortedWindow &after, FlagSink &rate_out,
                  FlagSink &regression_out) {
  const size_t w = p.window;
  if (b - a <= w) return;
  // The rate rule also needs the loss to stay down: the window starting at
  // step i. Near the end it may be shorter, but at least half a window, so
  // that a collapse in the last steps is still judged (the no-decrease rule
  // covers the shorter tail: see docs/losscheck.md).
  const size_t min_after = (w + 1) / 2;
  before.clear();
  after.clear();
  for (size_t i = a; i < a + w; ++i) before.insert(losses[i]);
  for (size_t i = a + w; i < std::min(b, a + 2 * w); ++i) after.insert(losses[i]);
  Run rate, regression;
  size_t rate_after_len = 0;  // window length at the rate run's first step
  for (size_t i = a + w; i < b; ++i) {
    const double x = losses[i], med = before.median();

    // Regression. When x is within the relative margin it is within the
    // larger one too, so the MAD (the costly part) is computed only past it.
    const double rel_margin = p.regression_min_increase * std::fabs(med);
    bool spike = false;
    if (x > med + rel_margin) {
      const double sigma = kMadToSigma * before.mad();
      const double threshold = med + std::max(p.regression_sigmas * sigma, rel_margin);
      if (x > threshold) {
        spike = true;
        extend(regression, i, x, med, sigma, threshold,
               regression.open && x > losses[regression.extreme]);
      }
    }
    if (!spike) close_regression(regression, losses, p, w, regression_out);

    // Implausible rate.
    bool fast = false;
    if (after.size() >= min_after) {
      const double floor = med - p.max_drop * std::fabs(med), after_med = after.median();
      if (x < floor && after_med < floor) {
        fast = true;
        if (!rate.open) rate_after_len = after.size();
        extend(rate, i, x, med, after_med, floor, false);
      }
    }
    if (!fast) close_rate(rate, p, w, rate_after_len, rate_out);

    before.erase(losses[i - w]);
    before.insert(x);
    after.erase(x);
    if (i + w < b) after.insert(losses[i + w]);
  }
  close_regression(regression, losses, p, w, regression_out);
  close_rate(rate, p, w, rate_after_len, rate_out);
}

void check_windows(const std::vector<double> &losses, const LossCheckParams &p, FlagSink &rate_out,
                   FlagSink &regression_out) {
  const size_t n = losses.size();
  SortedWindow before(p.window), after(p.window);
  size_t a = 0;
  while (a < n) {
    if (!std::isfinite(losses[a])) {
      ++a;
      continue;
    }
    size_t b = a + 1;
    while (b < n && std::isfinite(losses[b])) ++b;
    scan_stretch(losses, a, b, p, before, after, rate_out, regression_out);
    a = b;
  }
}

}  // namespace

void validate(const LossCheckParams &p) {
  if (p.window == 0)
    fail(Status::kInvalidArgument, "loss check window is 0 steps; it must be at least 1");
  if (p.window > kMaxLossWindow)
    fail(Status::kInvalidArgument, "loss check window is {} steps, more than the limit {}",
         p.window, kMaxLossWindow);
  if (!(p.decrease_tolerance >= 0 && p.decrease_tolerance < 1))
    fail(Status::kInvalidArgument, "decrease_tolerance is {}; it must be in [0, 1)",
         p.decrease_tolerance);
  if (!(p.decrease_sigmas >= 0 && std::isfinite(p.decrease_sigmas)))
    fail(Status::kInvalidArgument, "decrease_sigmas is {}; it must be finite and >= 0",
         p.decrease_sigmas);
  if (!(p.max_drop > 0 && p.max_drop <= 1))
    fail(Status::kInvalidArgument, "max_drop is {}; it must be in (0, 1]", p.max_drop);
  if (p.frozen_min_steps < 2)
    fail(Status::kInvalidArgument, "frozen_min_steps is {}; it must be at least 2",
         p.frozen_min_steps);
  if (!(p.frozen_epsilon >= 0 && std::isfinite(p.frozen_epsilon)))
    fail(Status::kInvalidArgument, "frozen_epsilon is {}; it must be finite and >= 0",
         p.frozen_epsilon);
  if (!(p.regression_sigmas >= 0 && std::isfinite(p.regression_sigmas)))
    fail(Status::kInvalidArgument, "regression_sigmas is {}; it must be finite and >= 0",
         p.regression_sigmas);
  if (!(p.regression_min_increase >= 0 && std::isfinite(p.regression_min_increase)))
    fail(Status::kInvalidArgument, "regression_min_increase is {}; it must be finite and >= 0",
         p.regression_min_increase);
  if (p.max_flags == 0) fail(Status::kInvalidArgument, "max_flags is 0; it must be at least 1");
}

const char *loss_flag_name(LossFlagKind kind) noexcept {
  switch (kind) {
    case LossFlagKind::kNoDecrease:
      return "no_decrease";
    case LossFlagKind::kImplausibleRate:
      return "implausible_rate";
    case LossFlagKind::kFrozen:
      return "frozen";
    case LossFlagKind::kRegression:
      return "regression";
    case LossFlagKind::kNonFinite:
      return "non_finite";
  }
  return "unknown";
}

std::vector<LossFlag> check_loss_curve(const std::vector<double> &losses,
                                       const LossCheckParams &params) {
  validate(params);
  FlagSink no_decrease(LossFlagKind::kNoDecrease, params.max_flags);
  FlagSink rate(LossFlagKind::kImplausibleRate, params.max_flags);
  FlagSink frozen(LossFlagKind::kFrozen, params.max_flags);
  FlagSink regression(LossFlagKind::kRegression, params.max_flags);
  FlagSink non_finite(LossFlagKind::kNonFinite, params.max_flags);
  check_no_decrease(losses, params, no_decrease);
  check_windows(losses, params, rate, regression);
  check_frozen(losses, params, frozen);
  check_non_finite(losses, non_finite);

  std::vector<LossFlag> out;
  uint64_t dropped = 0;
  for (FlagSink *sink : {&no_decrease, &rate, &frozen, &regression, &non_finite}) {
    std::move(sink->flags().begin(), sink->flags().end(), std::back_inserter(out));
    dropped += sink->dropped();
  }
  // Flags of one kind never share a first step, so this order is total.
  std::sort(out.begin(), out.end(), [](const LossFlag &x, const LossFlag &y) {
    return std::pair{x.first_step, x.kind} < std::pair{y.first_step, y.kind};
  });
  if (out.size() > params.max_flags) {
    dropped += out.size() - params.max_flags;
    out.resize(params.max_flags);
  }
  if (dropped)
    out.back().message += fmt::format(" (flag limit reached: {} more flags not listed)", dropped);
  return out;
}

}  // namespace pot::losscheck
