// Norm buckets for the cross-architecture path (docs/PROTOCOL.md section
// 13): the update norm (hash/update_norm.h) quantised on a log scale;
// buckets that differ by one match, so a value on a bucket edge is not a
// false reject.
#pragma once

#include <cstdint>

namespace pot::witness {

inline constexpr int64_t kBucketZero = INT64_MIN;      // the norm is exactly 0
inline constexpr int64_t kBucketNonFinite = INT64_MAX; // NaN or infinite norm
inline constexpr uint32_t kMaxResolution = 1u << 16;

// floor(resolution * log2(norm)) for a finite norm > 0; kBucketZero for 0,
// kBucketNonFinite for NaN/Inf. kInvalidArgument for a negative norm or a
// resolution outside 1..kMaxResolution.
int64_t norm_bucket(double norm, uint32_t resolution);

// Adjacent or equal regular buckets match; a sentinel matches only itself.
bool buckets_match(int64_t committed, int64_t observed);

}  // namespace pot::witness
