// The update norm of docs/PROTOCOL.md section 13: the L2 norm of the change
// of a state's parameters, accumulated in float64 in a fixed order. A step
// leaf commits it (section 10); the cross-architecture path compares it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pot::hash {

// The tensors a step leaf's update norm covers: the parameters.
inline constexpr std::string_view kLeafNormPrefix = "param/";

class SafetensorsFile;
struct StTensor;

// L2 norm of post - pre over the floating-point tensors (F16, BF16, F32, F64)
// whose names start with `prefix`, in bytewise name order, each element pair
// converted exactly to float64, the squared differences summed sequentially.
// Both states must hold the same such tensors with the same dtype and shape
// (kInvalidArgument naming the first difference).
double update_norm(const SafetensorsFile &pre, const SafetensorsFile &post,
                   const std::string &prefix);
// The same over tensors in bytewise name order (an in-memory state).
double update_norm(const std::vector<StTensor> &pre, const std::vector<StTensor> &post,
                   const std::string &prefix);

}  // namespace pot::hash
