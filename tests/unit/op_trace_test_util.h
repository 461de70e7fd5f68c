// A synthetic operator trace for the referee's tests without LibTorch
// (test_op_referee.cpp, test_ledger_operators.cpp): "test::f(x, k)" nodes
// whose results a fake backend computes, over a pre-state of one tensor.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "dispute/op_node.h"
#include "dispute/op_referee.h"
#include "dispute/op_trace.h"
#include "hash/state.h"
#include "hash/tensor.h"
#include "merkle/state_proof.h"

namespace pot::op_trace_test {

using namespace pot::dispute;
using hash::Digest;

inline Digest label(const std::string &s) { return hash::sha256(ByteView(reinterpret_cast<const uint8_t *>(s.data()), s.size())); }

inline OpValue tensor(const std::string &content, OpSource source = {}) {
  OpValue v;
  v.kind = ValueKind::kTensor;
  v.tensor.dtype = hash::DType::kF32;
  v.tensor.shape = {2, 3};
  v.tensor.strides = {3, 1};
  v.tensor.chunk_root = label(content);
  v.tensor.source = std::move(source);
  return v;
}

inline OpValue integer(int64_t i) {
  OpValue v;
  v.kind = ValueKind::kInt;
  v.integer = i;
  return v;
}

inline OpSource from_node(uint64_t j, uint32_t slot = 0) { return OpSource{SourceKind::kNode, j, slot, {}}; }
inline OpSource from_state(const std::string &name) { return OpSource{SourceKind::kState, 0, 0, name}; }

// The pre-state: one tensor "param/w" with content "w0".
inline const std::map<std::string, Digest> &pre_tensors() {
  static const std::map<std::string, Digest> m{
      {"param/w", hash::tensor_digest(hash::TensorMeta{"param/w", hash::DType::kF32, {2, 3}}, 24, label("w0"))}};
  return m;
}

// "test::f(x, k)" outputs label(x's content + "*" + k): what the fake
// backend runs. The honest trace: f(param/w, 2), f(node 0, 3), f(node 1, 4).
inline OpNode f_node(const OpValue &in, int64_t k, const std::string &in_content) {
  OpNode n;
  n.name = "test::f";
  n.inputs = {in, integer(k)};
  n.outputs = {tensor(fmt::format("{}*{}", in_content, k))};
  return n;
}

inline std::vector<OpNode> honest_nodes() {
  std::vector<OpNode> t;
  t.push_back(f_node(tensor("w0", from_state("param/w")), 2, "w0"));
  t.push_back(f_node(tensor("w0*2", from_node(0)), 3, "w0*2"));
  t.push_back(f_node(tensor("w0*2*3", from_node(1)), 4, "w0*2*3"));
  return t;
}

class FakeBackend : public RefereeBackend {
 public:
  int executed = 0, replayed = 0;
  std::optional<OpTensor> batch_tensor(uint32_t, const std::string &) override { return std::nullopt; }
  std::optional<std::string> not_executable(const OpNode &n) override {
    if (n.name == "test::random") return "random";
    return std::nullopt;
  }
  std::vector<OpValue> execute(const OpNode &n, const std::vector<Bytes> &tensors) override {
    ++executed;
    if (tensors.size() != 1) fail(Status::kInvalidArgument, "one tensor");
    const std::string in(tensors[0].begin(), tensors[0].end());
    return {tensor(fmt::format("{}*{}", in, n.inputs[1].integer))};
  }
  std::optional<Bytes> true_node(uint64_t index) override {
    ++replayed;
    const auto t = honest_nodes();
    if (index >= t.size()) return std::nullopt;
    return encode_op_node(t[index]);
  }
};

// A party's opening of node `index` of `nodes`, as open_op_node builds one;
// `content` is what it says the input tensor holds.
inline NodeOpening open(const std::vector<OpNode> &nodes, uint64_t index, const std::string &content) {
  const OpTrace t(nodes);
  NodeOpening o;
  o.node = t.node(index);
  o.inclusion = t.inclusion_proof(index, index + 1);
  if (index > 0) o.consistency = t.consistency_proof(index, index + 1);
  for (const OpTensor *in : op_tensors(nodes[index].inputs)) {
    if (in->source.kind == SourceKind::kNode)
      o.producers.emplace(in->source.node, ProducerOpening{t.node(in->source.node), t.inclusion_proof(in->source.node, index)});
    if (in->source.kind == SourceKind::kState)
      o.state.emplace(in->source.name, merkle::prove_tensor(pre_tensors(), in->source.name));
  }
  o.tensors.push_back(Bytes(content.begin(), content.end()));
  return o;
}

}  // namespace pot::op_trace_test
