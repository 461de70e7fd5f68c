// The update norm of docs/PROTOCOL.md section 13: the L2 norm of the change
// of a state's parameters, accumulated in float64 in a fixed order. A step
// leaf commits it (section 10); the cross-architecture path compares it.
#pragma once

#include <cstdint>
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

// How far apart two updates from one state are (docs/PROTOCOL.md 21.5, the
// cross-architecture comparison of the update): with d_a = a - pre and
// d_b = b - pre, element by element in float64 (converted as above), over
// the same tensors as update_norm, in the same order.
struct UpdateAgreement {
  double error = 0;      // ||d_a - d_b|| over every selected tensor
  double reference = 0;  // max(||d_a||, ||d_b||) over every selected tensor
  // error / reference (0 when both updates are zero): 0 for the same
  // update, 2 for opposite ones, ~1.4 for unrelated ones of one size.
  double relative = 0;
  // The largest relative error of one F32 or F64 tensor of at least
  // `min_elements` elements whose update is not zero in both, and that
  // tensor. 16-bit tensors are left out: their updates are multiples of a
  // unit in the last place that other kernels round the other way (a
  // BF16 tensor's update differed by 0.48 of its size on other kernels).
  double worst_relative = 0;
  std::string worst_tensor;
  uint64_t worst_elements = 0;
  bool low_precision = false;  // some selected tensor is F16 or BF16
};
// kInvalidArgument as update_norm when the three states do not hold the
// same selected tensors with one dtype and shape.
UpdateAgreement update_agreement(const std::vector<StTensor> &pre, const std::vector<StTensor> &a,
                                 const std::vector<StTensor> &b, const std::string &prefix, uint64_t min_elements);

}  // namespace pot::hash
