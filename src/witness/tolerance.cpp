#include "witness/tolerance.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace pot::witness {

double loss_error(double committed, double replayed) {
  if (committed == replayed) return 0;
  const double scale = std::max({std::fabs(committed), std::fabs(replayed), kLossFloor});
  return std::fabs(committed - replayed) / scale;
}

std::optional<std::string> loss_disagrees(double committed, double replayed, uint64_t step) {
  const double e = loss_error(committed, replayed);
  if (!(e > kLossTolerance)) return std::nullopt;
  return fmt::format("step {} replays to the loss {:.9g}, leaf {} commits to {:.9g}: a relative difference of {:.3g}, "
                     "above the tolerance {} of the cross-architecture comparison",
                     step, replayed, step, committed, e, kLossTolerance);
}

std::optional<std::string> update_disagrees(const hash::UpdateAgreement &a, uint64_t step) {
  const double tolerance = a.low_precision ? kLowPrecisionUpdateTolerance : kUpdateTolerance;
  if (a.relative > tolerance)
    return fmt::format("the served S_{}'s update differs from the replayed one by {:.3g} of its size (tolerance {}): "
                       "another direction or size than the step's gradient gives",
                       step, a.relative, tolerance);
  if (a.worst_relative > kTensorUpdateTolerance)
    return fmt::format("the served S_{}'s update of '{}' ({} elements) differs from the replayed one by {:.3g} of its "
                       "size (tolerance {} per tensor)",
                       step, a.worst_tensor, a.worst_elements, a.worst_relative, kTensorUpdateTolerance);
  return std::nullopt;
}

}  // namespace pot::witness
