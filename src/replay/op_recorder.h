// The operator trace of a replayed step (docs/PROTOCOL.md section 22.2) and
// the referee's re-execution of one operator of it (section 22.3).
//
// The recorder sees every ATen operator the step runs through LibTorch's
// RecordFunction callbacks (thread-local, on the replaying thread) and keeps
// the top-level ones: an operator called by another operator is part of its
// caller's node, and the referee re-running the caller runs it too. The
// autograd engine's node functions are not operators: the operators they
// call are top-level. replay_step switches the recorder on for the step's
// computation only (forward, backward, clipping, the optimizer update) and
// off for its own checks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <torch/script.h>

#include "spec/spec.h"
#include "dispute/op_node.h"

namespace pot::replay {

using TensorMap = std::map<std::string, at::Tensor>;

class OpRecorder {
 public:
  // Registers the callback on the calling thread (kState when a recorder is
  // already registered there); it records nothing until resume().
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder &) = delete;
  OpRecorder &operator=(const OpRecorder &) = delete;

  // Sources an input can name besides earlier nodes: the pre-state's
  // tensors (canonical names) and a micro-batch's forward arguments.
  void add_state(const TensorMap &pre);
  void add_batch(uint32_t microbatch, const std::string &name, const at::Tensor &t);

  void resume() { active_ = true; }
  void pause() noexcept { active_ = false; }
  // Appends the post-state node (kPostStateOp): S_t's tensors in name order,
  // each a string (its name) then the tensor, and S_t's state digest.
  // kInternal when a callback failed on the way (an operator value the trace
  // cannot encode is not a failure: it becomes an opaque value).
  void finish(const TensorMap &post, const hash::Digest &post_digest);

  std::vector<dispute::OpNode> take() { return std::move(nodes_); }
  // Keep node `index`'s input tensors' bytes (depth-first, row-major).
  void capture(uint64_t index) { capture_ = index; }
  std::vector<Bytes> take_captured() { return std::move(captured_); }

  // Callback internals (public for the C-style callbacks in op_trace.cpp).
  struct Pending;
  void on_start(const c10::ArrayRef<const c10::IValue> &inputs, const std::string &name, const std::string &overload,
                size_t *index);
  void on_end(size_t index, const std::vector<c10::IValue> &outputs);
  bool active() const { return active_; }
  int depth = 0;  // nesting of FUNCTION events on this thread

 private:
  dispute::OpValue input_value(const c10::IValue &v);
  dispute::OpValue output_value(const c10::IValue &v, bool allocation, uint32_t &slot, size_t node);

  // RecordFunction on for this thread while recording, whatever the
  // application set: a trace must not silently come out empty.
  at::RecordFunctionGuard enabled_{true};
  uint64_t handle_ = 0;
  bool active_ = false;
  std::string error_;
  std::vector<dispute::OpNode> nodes_;
  std::optional<uint64_t> capture_;
  std::vector<Bytes> captured_;
  void keep_bytes(const c10::IValue &v);
  std::map<std::string, dispute::OpSource> produced_, state_, batch_;  // content key -> source
  std::map<const void *, int64_t> uninit_;                            // TensorImpl -> version
};

// Pauses on scope exit: recording spans one block of the step.
class OpRecording {
 public:
  explicit OpRecording(OpRecorder *r) : r_(r) {
    if (r_) r_->resume();
  }
  ~OpRecording() {
    if (r_) r_->pause();
  }
  OpRecording(const OpRecording &) = delete;
  OpRecording &operator=(const OpRecording &) = delete;

 private:
  OpRecorder *r_;
};

// The trace value of a tensor as the recorder writes it (source kNone).
dispute::OpValue op_tensor_value(const at::Tensor &t);

// Whether the referee can run `node` alone: not the post-state node, no
// generator argument or random operator (the generator's state is not in
// the trace), no opaque value. The reason when not.
std::optional<std::string> not_executable(const dispute::OpNode &node);

// The referee's step (docs/PROTOCOL.md 22.3): runs node's operator alone on
// `tensors`, one per input tensor of the node in depth-first order, each of
// the node's dtype and shape in row-major order (the node's strides are
// rebuilt), under the spec's intra-op threads and deterministic setting,
// and returns the outputs as the recorder writes them. kUnsupported for a
// node not_executable names; kInvalidArgument for tensors that do not match
// the node (count, dtype, shape, chunk root) or an operator LibTorch does not
// know or cannot run on them.
std::vector<dispute::OpValue> execute_op(const spec::ExecutionSpec &spec, const dispute::OpNode &node,
                                         const std::vector<at::Tensor> &tensors);

}  // namespace pot::replay
