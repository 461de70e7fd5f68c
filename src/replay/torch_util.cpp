#include "replay/torch_util.h"

#include <fmt/format.h>

#include "common/error.h"

namespace pot::replay {

at::ScalarType to_torch(hash::DType d) {
  switch (d) {
    case hash::DType::kBool: return at::kBool;
    case hash::DType::kU8: return at::kByte;
    case hash::DType::kI8: return at::kChar;
    case hash::DType::kI16: return at::kShort;
    case hash::DType::kI32: return at::kInt;
    case hash::DType::kI64: return at::kLong;
    case hash::DType::kF16: return at::kHalf;
    case hash::DType::kBF16: return at::kBFloat16;
    case hash::DType::kF32: return at::kFloat;
    case hash::DType::kF64: return at::kDouble;
    default: break;
  }
  fail(Status::kUnsupported, "dtype {} has no LibTorch equivalent", hash::dtype_name(d));
}

hash::DType from_torch(at::ScalarType t, const std::string &name) {
  switch (t) {
    case at::kBool: return hash::DType::kBool;
    case at::kByte: return hash::DType::kU8;
    case at::kChar: return hash::DType::kI8;
    case at::kShort: return hash::DType::kI16;
    case at::kInt: return hash::DType::kI32;
    case at::kLong: return hash::DType::kI64;
    case at::kHalf: return hash::DType::kF16;
    case at::kBFloat16: return hash::DType::kBF16;
    case at::kFloat: return hash::DType::kF32;
    case at::kDouble: return hash::DType::kF64;
    default: break;
  }
  fail(Status::kUnsupported, "tensor '{}' has dtype {}, which has no safetensors code", name,
       c10::toString(t));
}

std::string shape_str(at::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

at::Tensor tensor_from_bytes(const hash::TensorMeta &meta, ByteView data) {
  std::vector<int64_t> shape(meta.shape.begin(), meta.shape.end());
  // from_blob does not copy; clone() gives an owned, contiguous tensor.
  return torch::from_blob(const_cast<uint8_t *>(data.data()), shape,
                          torch::TensorOptions().dtype(to_torch(meta.dtype)))
      .clone();
}

}  // namespace pot::replay
