// Non-finite values (NaN, +-infinity) in tensor bytes: a training state or
// loss holding one is not a training step (docs/PROTOCOL.md section 18,
// check `nonfinite`). Decided on the bits, without converting: an element
// of F16, BF16, F32 or F64 is non-finite when its exponent field is all ones.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "hash/dtype.h"

namespace pot::hash {

class SafetensorsFile;
struct StTensor;

// Index of the first non-finite element of `bytes` (little-endian elements
// of dtype `d`), or nullopt when all are finite or `d` is not a floating
// type. `bytes` must hold whole elements.
std::optional<size_t> first_nonfinite(DType d, ByteView bytes) noexcept;

// "tensor 'param/w' element 3 is NaN" for the first tensor of the file (in
// name order) holding a non-finite element, or nullopt.
std::optional<std::string> nonfinite_tensor(const SafetensorsFile &file);
std::optional<std::string> nonfinite_tensor(const std::vector<StTensor> &tensors);

// Subnormal values (docs/PROTOCOL.md section 18, check 28 `subnormal`): an
// element of BF16, F32 or F64 whose exponent field is zero and whose
// fraction is not. Arithmetic on them takes a microcode assist on many CPUs
// (tens to hundreds of cycles per operation), so a state of subnormal
// weights makes a replay many times slower than an honest step while its
// forger computes nothing. F16 is not counted: its subnormals (below
// 6.1e-5) are common in honest weights and become normal F32 values in the
// CPU kernels. Decided on the bits, as the non-finite values.
size_t count_subnormal(DType d, ByteView bytes) noexcept;

// The subnormal elements of a state, split as the rule of check 28 bounds
// them: the parameters (tensors named "param/...", which every matrix
// product of the forward and backward passes reads) and the rest (the
// optimizer state, read only by element-wise updates).
struct SubnormalCensus {
  uint64_t param_elements = 0;   // elements of param/ tensors of dtype BF16, F32 or F64
  uint64_t param_subnormal = 0;
  uint64_t other_elements = 0;   // the same for every other tensor
  uint64_t other_subnormal = 0;
  std::string first_param;       // the first param/ tensor (name order) holding one, or ""
  std::string first_other;
};
SubnormalCensus subnormal_census(const SafetensorsFile &file);
SubnormalCensus subnormal_census(const std::vector<StTensor> &tensors);

// The bounds of check 28: at most one subnormal parameter element in
// kParamSubnormalShare (an honest F32 weight is never below 1.2e-38) and
// one other element in kOtherSubnormalShare (an optimizer moment of a
// parameter whose gradient stays zero decays through the subnormal range:
// Adam's first moment for ~150 steps, ~800 steps after its last gradient,
// its second for ~16,000 steps, ~64,000 after). Within them the matrix
// products read at most one subnormal weight in 4096, and the element-wise
// optimizer update, a small part of a step, at most one operand in 16.
inline constexpr uint64_t kParamSubnormalShare = 4096;
inline constexpr uint64_t kOtherSubnormalShare = 16;

// "S holds 9 subnormal parameter values of 1000 (tensor 'param/w' first);
// at most 1 in 4096 ..." when the census exceeds a bound, else nullopt.
std::optional<std::string> subnormal_excess(const SubnormalCensus &c);

}  // namespace pot::hash
