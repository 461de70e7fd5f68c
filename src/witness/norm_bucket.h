// Norm buckets for the cross-architecture path (docs/PROTOCOL.md section
// 13): the L2 norm of a parameter update, accumulated in float64 in a fixed
// order, quantised on a log scale; buckets that differ by one match, so a
// value on a bucket edge is not a false reject.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hash/safetensors.h"

namespace pot::witness {

inline constexpr int64_t kBucketZero = INT64_MIN;      // the norm is exactly 0
inline constexpr int64_t kBucketNonFinite = INT64_MAX; // NaN or infinite norm
inline constexpr uint32_t kMaxResolution = 1u << 16;

// floor(resolution * log2(norm)) for a finite norm > 0; kBucketZero for 0,
// kBucketNonFinite for NaN/Inf. kInvalidArgument for a negative norm or a
// resolution outside 1..kMaxResolution.
int64_t norm_bucket(double norm, uint32_t resolution);

// Adjacent or equal regular buckets match; a sentinel matches only itself.
bool buckets_match(int64_t declared, int64_t observed);

// L2 norm of post - pre over the floating-point tensors (F16, BF16, F32, F64)
// whose names start with `prefix`, in bytewise name order, each element pair
// converted exactly to float64, the squared differences summed sequentially.
// Both states must hold the same such tensors with the same dtype and shape
// (kInvalidArgument naming the first difference).
double update_norm(const hash::SafetensorsFile &pre, const hash::SafetensorsFile &post,
                   const std::string &prefix);
// The same over tensors in bytewise name order (an in-memory state).
double update_norm(const std::vector<hash::StTensor> &pre, const std::vector<hash::StTensor> &post,
                   const std::string &prefix);

}  // namespace pot::witness
