#include "replay/referee_backend.h"

#include <fmt/format.h>

#include "common/error.h"
#include "dispute/op_trace.h"
#include "hash/state.h"
#include "hash/tensor.h"
#include "replay/op_recorder.h"
#include "replay/torch_util.h"

namespace pot::replay {

using dispute::OpNode;
using dispute::OpTensor;
using dispute::SourceKind;

namespace {

std::vector<OpNode> trace_of_step(const StepInputs &in, std::optional<uint64_t> capture, std::vector<Bytes> *captured) {
  OpTraceOut out;
  out.capture = capture;
  StepOptions opts;
  opts.run_id = in.run_id;
  opts.op_trace = &out;
  replay_step(in.program, in.spec, in.step, in.pre, in.batch, opts);
  if (captured) *captured = std::move(out.captured);
  return std::move(out.nodes);
}

}  // namespace

dispute::NodeOpening open_op_node(const StepInputs &in, uint64_t index) {
  std::vector<Bytes> captured;
  const std::vector<OpNode> nodes = trace_of_step(in, index, &captured);
  if (index > nodes.size())
    fail(Status::kOutOfRange, "node {}: the step's trace has {} nodes", index, nodes.size());
  const dispute::OpTrace trace(nodes);
  dispute::NodeOpening o;
  if (index == nodes.size()) return o;  // the trace's end: nothing to prove beyond the agreed root
  o.node = trace.node(index);
  o.inclusion = trace.inclusion_proof(index, index + 1);
  if (index > 0) o.consistency = trace.consistency_proof(index, index + 1);
  std::optional<std::map<std::string, hash::Digest>> pre_digests;
  for (const OpTensor *t : dispute::op_tensors(nodes[index].inputs)) {
    const dispute::OpSource &s = t->source;
    if (s.kind == SourceKind::kNode && !o.producers.count(s.node)) {
      o.producers.emplace(s.node, dispute::ProducerOpening{trace.node(s.node), trace.inclusion_proof(s.node, index)});
    } else if (s.kind == SourceKind::kState && !o.state.count(s.name)) {
      if (!pre_digests) {
        hash::StateBuilder b(1);
        for (const hash::StTensor &v : state_views(in.pre)) b.add_tensor(v.meta, v.data);
        pre_digests = b.tensors();
      }
      o.state.emplace(s.name, merkle::prove_tensor(*pre_digests, s.name));
    }
  }
  o.tensors = std::move(captured);
  return o;
}

std::optional<OpTensor> StepReferee::batch_tensor(uint32_t microbatch, const std::string &name) {
  // default_collate stacks the samples' tensors along a new dimension 0: the
  // row-major bytes of the stack are the samples' bytes one after another.
  if (microbatch >= in_.batch.size()) return std::nullopt;
  const auto &mb = in_.batch[microbatch];
  OpTensor t;
  Bytes bytes;
  for (size_t s = 0; s < mb.size(); ++s) {
    const long i = mb[s]->find(name);
    if (i < 0) return std::nullopt;
    const auto &meta = mb[s]->entry(static_cast<size_t>(i)).meta;
    if (s == 0) {
      t.dtype = meta.dtype;
      t.shape.push_back(mb.size());
      t.shape.insert(t.shape.end(), meta.shape.begin(), meta.shape.end());
    } else if (meta.dtype != t.dtype || !std::equal(meta.shape.begin(), meta.shape.end(), t.shape.begin() + 1, t.shape.end())) {
      return std::nullopt;
    }
    const ByteView d = mb[s]->data(static_cast<size_t>(i));
    bytes.insert(bytes.end(), d.begin(), d.end());
  }
  if (mb.empty()) return std::nullopt;
  t.chunk_root = hash::chunk_roots({bytes}, 1)[0];
  return t;
}

std::optional<std::string> StepReferee::not_executable(const OpNode &node) { return replay::not_executable(node); }

std::vector<dispute::OpValue> StepReferee::execute(const OpNode &node, const std::vector<Bytes> &tensors) {
  const auto inputs = dispute::op_tensors(node.inputs);
  if (tensors.size() != inputs.size())
    fail(Status::kInvalidArgument, "{} input tensors given, node {} has {}", tensors.size(), dispute::describe(node),
         inputs.size());
  std::vector<at::Tensor> ts;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const hash::TensorMeta meta{"input", inputs[k]->dtype, inputs[k]->shape};
    const uint64_t want = hash::validate_meta(meta);
    if (tensors[k].size() != want)
      fail(Status::kInvalidArgument, "input tensor {}: {} bytes, its dtype and shape take {}", k, tensors[k].size(),
           want);
    ts.push_back(tensor_from_bytes(meta, tensors[k]));
  }
  return execute_op(in_.spec, node, ts);
}

std::optional<Bytes> StepReferee::true_node(uint64_t index) {
  if (!trace_) trace_ = trace_of_step(in_, std::nullopt, nullptr);
  if (index >= trace_->size()) return std::nullopt;
  return dispute::encode_op_node((*trace_)[index]);
}

}  // namespace pot::replay
