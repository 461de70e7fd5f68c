// Check 27 `gradient_ignored` (docs/PROTOCOL.md section 21.5): does the
// replayed S_t depend on the step's gradient? The replay (src/replay)
// measures a GradientTrace; this is the rule that judges it, without
// LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pot::witness {

// What the step's gradient did (check 27 `gradient_ignored`,
// docs/PROTOCOL.md section 21.5). The replay applies each parameter's
// update twice from S_{t-1}: with the step's gradient (that is S_t) and with
// a zero gradient. An element "differs" when its bit patterns differ.
// Parameters without a gradient are skipped by both, as torch.optim skips
// them, and are not counted.
struct GradientTrace {
  double learning_rate = 0;              // the spec's rate of the step
  uint64_t param_elements = 0;           // elements of the updated parameters
  uint64_t moved_elements = 0;           // ... that differ from S_{t-1}
  uint64_t gradient_elements = 0;        // ... that differ from the zero-gradient update
  uint64_t optim_elements = 0;           // optimizer-state elements the update wrote (no step counters)
  uint64_t optim_gradient_elements = 0;  // ... that differ from the zero-gradient update
  // Per tensor (since 0.3.0): the parameter tensors of at least
  // kMinTracedTensorElements elements, at a rate above 0, whose gradient has
  // a non-zero element but none of whose elements (parameter or optimizer
  // state) differs from the zero-gradient update, although the tensor moved
  // or keeps optimizer state; the first of them in update order.
  uint64_t untraced_tensors = 0;
  std::string first_untraced;            // "param/<name>", or ""
  uint64_t first_untraced_elements = 0;
};

// The smallest parameter tensor the per-tensor rule of check 27 holds to
// it. Honest BF16 SGD near convergence can leave a small tensor without a
// trace (a convolution bias of 8 elements, measured by
// bench/gradient_dependence.py: every gradient element under 1/512 of its
// momentum); a forger gains nothing by skipping the backward of tensors
// this small.
inline constexpr uint64_t kMinTracedTensorElements = 64;

// The gradient was ignored (a reason naming `step`), or nullopt: at a rate
// above 0, no element of S_t (parameters or optimizer state) differs from
// the zero-gradient update although the step changed something (a parameter
// moved, or the optimizer keeps state the gradient feeds). Not applicable at
// a rate of 0 (the task's schedule trains nothing then), nor to an
// optimizer without state whose parameters did not move (at a rate too
// small to move any, plain SGD has nowhere to put the gradient). The
// optimizer state counts: late in a schedule (BF16, rate 3e-4) honest
// parameters may move by momentum alone while the gradient still feeds the
// moments. What it stops: optimizer state saturated by a forged step
// (moments so large that the gradient's share rounds away) makes every later
// S_t computable without a backward pass (docs/security.md section 6).
//
// Per tensor: a trace in the state as a whole is not enough. The rule also
// fails a step whose replay has an untraced tensor (above): a forger that
// saturates the optimizer state of every tensor but one computes the
// backward of that one only; holding every tensor to a trace makes it
// compute each tensor's gradient, which needs the activation gradients of
// every layer above the tensor (docs/PROTOCOL.md 21.5 says what is left).
std::optional<std::string> gradient_ignored(const GradientTrace &trace, uint64_t step);

}  // namespace pot::witness
