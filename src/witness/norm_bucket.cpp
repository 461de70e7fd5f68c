#include "witness/norm_bucket.h"

#include <cmath>

#include "common/error.h"

namespace pot::witness {

int64_t norm_bucket(double norm, uint32_t resolution) {
  if (resolution == 0 || resolution > kMaxResolution)
    fail(Status::kInvalidArgument, "norm-bucket resolution {} is outside 1..{}", resolution, kMaxResolution);
  if (std::isnan(norm) || std::isinf(norm)) return kBucketNonFinite;
  if (norm < 0) fail(Status::kInvalidArgument, "a norm cannot be negative ({})", norm);
  if (norm == 0) return kBucketZero;
  return static_cast<int64_t>(std::floor(static_cast<double>(resolution) * std::log2(norm)));
}

bool buckets_match(int64_t committed, int64_t observed) {
  const bool sentinel = committed == kBucketZero || committed == kBucketNonFinite ||
                        observed == kBucketZero || observed == kBucketNonFinite;
  if (sentinel) return committed == observed;
  const int64_t d = committed > observed ? committed - observed : observed - committed;
  return d <= 1;
}

}  // namespace pot::witness
