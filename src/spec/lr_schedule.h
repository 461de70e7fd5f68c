// The learning-rate schedule of an execution spec (docs/PROTOCOL.md 14.3):
// the rate of training step t as torch 1.13's torch.optim.lr_scheduler
// computes it when its step() follows every optimizer step, bit for bit.
//
// A schedule is a list of phases (one scheduler each) switched at
// milestones, which is torch's SequentialLR; one phase and no milestone is
// that scheduler alone; no phase is a constant rate. A LambdaLR phase and
// rates set by hand (warm-up code writing param_groups[g]["lr"] before each
// step) are tables of binary64 values held in the spec. torch evaluates the
// schedulers recursively ("chainable" form: each rate from the previous
// one) and a phase's first rate in closed form (SequentialLR calls
// step(0)); the rates here follow the same binary64 operations in the same
// order, so they are equal to torch's, not merely close. Pure arithmetic,
// no LibTorch: chain clients evaluate it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pot::spec {

enum class LrPhaseKind {
  kStep = 1,         // StepLR(step_size, gamma)
  kMultiStep = 2,    // MultiStepLR(milestones, gamma)
  kExponential = 3,  // ExponentialLR(gamma)
  kCosine = 4,       // CosineAnnealingLR(T_max, eta_min)
  kLinear = 5,       // LinearLR(start_factor, end_factor, total_iters)
  kConstant = 6,     // ConstantLR(factor, total_iters)
  kLambda = 7,       // LambdaLR(lambda e: factors[min(e, len - 1)])
};

struct LrPhase {
  LrPhaseKind kind = LrPhaseKind::kStep;
  uint32_t step_size = 0;             // step
  std::vector<uint64_t> milestones;   // multi_step: non-decreasing, >= 1 (a repeat counts twice)
  double gamma = 0;                   // step, multi_step, exponential: in (0, 1]
  uint32_t t_max = 0;                 // cosine: 1..2^24
  double eta_min = 0;                 // cosine: finite, >= 0
  double start_factor = 0;            // linear: (0, 1]
  double end_factor = 0;              // linear: [0, 1]
  double factor = 0;                  // constant: (0, 1]
  uint32_t total_iters = 0;           // linear, constant: >= 1
  std::vector<double> factors;        // lambda: 1..kMaxLrTable, each finite and >= +0

  bool operator==(const LrPhase &o) const;
};

struct LrSchedule {
  std::vector<LrPhase> phases;       // 0..16; none: the optimizer's lr at every step
  std::vector<uint64_t> milestones;  // phases - 1 of them, strictly increasing, >= 1
  // Set by hand, without phases: every group's rate of step t is
  // rates[min(t - 1, len - 1)] (1..kMaxLrTable values, finite, >= +0).
  std::vector<double> rates;
  // The loop changes the rate (steps its scheduler, or sets it by hand) after
  // every `interval`-th training step: step t trains at the schedule's rate
  // of scheduler step floor((t - 1) / interval) + 1. 0: after every step
  // (1 is written as 0); len(train_loader) for a scheduler stepped per epoch.
  uint32_t interval = 0;

  // Throws kInvalidArgument naming the first rule broken ("spec.lr_schedule...").
  void validate() const;
  bool empty() const { return phases.empty() && rates.empty(); }
  bool operator==(const LrSchedule &o) const {
    return phases == o.phases && milestones == o.milestones && rates == o.rates && interval == o.interval;
  }
};

inline constexpr size_t kMaxLrPhases = 16;
// The last step a rate is evaluated for: the evaluation walks every step
// before it (tens of seconds at this bound, docs/performance.md), and no
// task admits more steps (task.max_steps).
inline constexpr uint64_t kMaxLrStep = uint64_t{1} << 32;
inline constexpr size_t kMaxLrMilestones = 256;
// Values in one table (a lambda phase's factors, the hand-set rates): 60 KiB
// of binary64, so that a table fits the spec's 64 KiB (a schedule whose
// tables together do not is refused by the spec's size bound).
inline constexpr size_t kMaxLrTable = 7680;

// The rates of consecutive steps, from step 1: next() returns the rate of
// step 1, then of step 2... (torch's param_groups[0]["lr"] before each
// optimizer.step()). Costs O(1) per step; a rate that is not finite or is
// negative (only reachable through extreme but valid parameters) throws
// kInvalidArgument naming the step.
class LrSequence {
 public:
  // The schedule must be valid (LrSchedule::validate) and outlive the sequence.
  LrSequence(const LrSchedule &schedule, double base_lr);
  double next();
  uint64_t steps_done() const { return step_; }

 private:
  void advance();  // the scheduler's next step

  const LrSchedule &s_;
  double base_;
  double lr_ = 0;
  uint64_t step_ = 0;   // rates returned so far: next() last returned the rate of step step_
  uint64_t epoch_ = 0;  // scheduler steps taken (rates computed)
};

// The rate of training step `step` (1..kMaxLrStep, kOutOfRange past it):
// O(step) arithmetic.
double learning_rate(const LrSchedule &schedule, double base_lr, uint64_t step);
// The rates of steps first..first+n-1 into out (first >= 1); validates the
// schedule first. On an error out is left untouched. O(first + 2n).
void learning_rates(const LrSchedule &schedule, double base_lr, uint64_t first, size_t n, double *out);

}  // namespace pot::spec
