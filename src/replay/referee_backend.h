// The LibTorch side of an operator dispute (docs/PROTOCOL.md 22.3): an
// honest party's opening of a node of its trace, and the referee's backend
// that checks batch tensors, runs one operator and, when the rules need it,
// replays the whole step.
#pragma once

#include <optional>

#include "dispute/op_referee.h"
#include "replay/replay.h"

namespace pot::replay {

// One step, as replay_step takes it; everything must outlive the user.
struct StepInputs {
  Program &program;
  const spec::ExecutionSpec &spec;
  uint64_t step;
  const TensorMap &pre;
  const Batch &batch;
  std::optional<hash::Digest> run_id;
};

// Replays the step and opens node `index` of its trace: the node, its proofs
// against the roots of the first index and index + 1 nodes, the producers
// and pre-state tensors its inputs name, and its input tensors' bytes. A
// trace of exactly `index` nodes opens as its end; kOutOfRange past that.
dispute::NodeOpening open_op_node(const StepInputs &in, uint64_t index);

class StepReferee : public dispute::RefereeBackend {
 public:
  explicit StepReferee(const StepInputs &in) : in_(in) {}
  std::optional<dispute::OpTensor> batch_tensor(uint32_t microbatch, const std::string &name) override;
  std::optional<std::string> not_executable(const dispute::OpNode &node) override;
  std::vector<dispute::OpValue> execute(const dispute::OpNode &node, const std::vector<Bytes> &tensors) override;
  std::optional<Bytes> true_node(uint64_t index) override;

 private:
  StepInputs in_;
  std::optional<std::vector<dispute::OpNode>> trace_;  // the replayed step's, once needed
};

}  // namespace pot::replay
