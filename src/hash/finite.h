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

}  // namespace pot::hash
