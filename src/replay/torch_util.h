// LibTorch helpers the replay layer's files share: dtype conversions, the
// tensor of a byte buffer, and guards for the process-wide settings a replay
// runs under (callers hold torch_state_mutex()).
#pragma once

#include <string>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include "common/bytes.h"
#include "hash/tensor.h"
#include "spec/spec.h"

namespace pot::replay {

// kUnsupported for a dtype LibTorch lacks (U16, U32, U64 in 1.13).
at::ScalarType to_torch(hash::DType d);
// kUnsupported for a LibTorch dtype without a pot code; `name` is for the message.
hash::DType from_torch(at::ScalarType t, const std::string &name);
std::string shape_str(at::IntArrayRef s);
// An owned, contiguous copy of bytes in meta's dtype and shape.
at::Tensor tensor_from_bytes(const hash::TensorMeta &meta, ByteView data);

class DeterministicGuard {
 public:
  explicit DeterministicGuard(bool on)
      : old_(at::globalContext().deterministicAlgorithms()),
        old_warn_(at::globalContext().deterministicAlgorithmsWarnOnly()) {
    at::globalContext().setDeterministicAlgorithms(on, false);
  }
  ~DeterministicGuard() { at::globalContext().setDeterministicAlgorithms(old_, old_warn_); }

 private:
  bool old_, old_warn_;
};

// The intra-op threads a step runs with: the caller's count when it names
// one, else the spec's (native: it pins the bits), else the process's own
// (pot-repro/1, whose bits no thread count changes).
inline int step_threads(const spec::ExecutionSpec &spec, unsigned requested = 0) {
  if (requested) return static_cast<int>(requested);
  return spec.intra_op_threads ? static_cast<int>(spec.intra_op_threads) : at::get_num_threads();
}

class ThreadsGuard {
 public:
  explicit ThreadsGuard(int n) : old_(at::get_num_threads()) { at::set_num_threads(n); }
  ~ThreadsGuard() { at::set_num_threads(old_); }

 private:
  int old_;
};

}  // namespace pot::replay
