#include "witness/gradient_trace.h"

#include <fmt/format.h>

namespace pot::witness {

std::optional<std::string> gradient_ignored(const GradientTrace &trace, uint64_t step) {
  if (trace.untraced_tensors > 0)
    return fmt::format("a zero gradient gives the same '{}' ({} elements) in S_{}: its gradient of step {} is not "
                       "zero but changed none of its elements or its optimizer state ({} such tensor{} of at least {} "
                       "elements; is their optimizer state saturated?)",
                       trace.first_untraced, trace.first_untraced_elements, step, step, trace.untraced_tensors,
                       trace.untraced_tensors == 1 ? "" : "s", kMinTracedTensorElements);
  if (!(trace.learning_rate > 0)) return std::nullopt;
  if (trace.gradient_elements > 0 || trace.optim_gradient_elements > 0) return std::nullopt;
  if (trace.moved_elements == 0 && trace.optim_elements == 0) return std::nullopt;
  return fmt::format("a zero gradient gives the same S_{}: the gradient of step {} changed none of the {} parameter "
                     "elements ({} moved) and none of the {} optimizer-state elements (is the optimizer state "
                     "saturated?)",
                     step, step, trace.param_elements, trace.moved_elements, trace.optim_elements);
}

}  // namespace pot::witness
