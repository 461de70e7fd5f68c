#include "dispute/trace.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/error.h"

namespace pot::dispute {

OpTrace::OpTrace(const std::vector<OpNode> &nodes) : tree_(merkle::StoredTree::in_memory()) {
  nodes_.reserve(nodes.size());
  for (const OpNode &n : nodes) {
    nodes_.push_back(encode_op_node(n));
    tree_->append(nodes_.back());
  }
}

Digest OpTrace::root(uint64_t size) const {
  if (size > nodes_.size())
    fail(Status::kOutOfRange, "the trace has {} nodes: no root of its first {}", nodes_.size(), size);
  return tree_->root(size);
}

const Bytes &OpTrace::node(uint64_t index) const {
  if (index >= nodes_.size()) fail(Status::kOutOfRange, "node {}: the trace has {} nodes", index, nodes_.size());
  return nodes_[index];
}

std::vector<Digest> OpTrace::inclusion_proof(uint64_t index, uint64_t size) const {
  return tree_->inclusion_proof(index, size);
}

std::vector<Digest> OpTrace::consistency_proof(uint64_t size1, uint64_t size2) const {
  return tree_->consistency_proof(size1, size2);
}

namespace {

const char *source_kind_name(SourceKind k) {
  switch (k) {
    case SourceKind::kNone: return "none";
    case SourceKind::kNode: return "node";
    case SourceKind::kState: return "state";
    case SourceKind::kBatch: return "batch";
    case SourceKind::kUninit: return "uninit";
  }
  return "?";
}

nlohmann::json value_json(const OpValue &v) {
  using nlohmann::json;
  switch (v.kind) {
    case ValueKind::kNone: return json{{"none", nullptr}};
    case ValueKind::kTensor: {
      const OpTensor &t = v.tensor;
      json src{{"kind", source_kind_name(t.source.kind)}};
      if (t.source.kind == SourceKind::kNode) {
        src["node"] = t.source.node;
        src["slot"] = t.source.slot;
      } else if (t.source.kind == SourceKind::kState) {
        src["name"] = t.source.name;
      } else if (t.source.kind == SourceKind::kBatch) {
        src["microbatch"] = t.source.slot;
        src["name"] = t.source.name;
      }
      return json{{"tensor",
                   {{"dtype", std::string(hash::dtype_name(t.dtype))},
                    {"shape", t.shape},
                    {"strides", t.strides},
                    {"chunk_root", t.chunk_root.hex()},
                    {"source", src}}}};
    }
    case ValueKind::kInt: return json{{"int", v.integer}};
    case ValueKind::kBool: return json{{"bool", v.integer != 0}};
    case ValueKind::kDouble: {
      double d;
      std::memcpy(&d, &v.bits, 8);
      Bytes be(8);
      for (int i = 0; i < 8; ++i) be[static_cast<size_t>(i)] = static_cast<uint8_t>(v.bits >> (8 * (7 - i)));
      // JSON numbers cannot hold NaN or infinities: the bits always come along.
      return json{{"double", std::isfinite(d) ? json(d) : json(nullptr)}, {"bits", to_hex(be)}};
    }
    case ValueKind::kString: return json{{"string", v.text}};
    case ValueKind::kList: {
      json a = json::array();
      for (const OpValue &e : v.list) a.push_back(value_json(e));
      return json{{"list", a}};
    }
    case ValueKind::kDevice: return json{{"device", v.text}};
    case ValueKind::kGenerator: return json{{"generator", nullptr}};
    case ValueKind::kOpaque: return json{{"opaque", v.text}};
    case ValueKind::kDigest: return json{{"digest", v.digest.hex()}};
  }
  return nullptr;
}

}  // namespace

std::string op_node_json(const OpNode &node) {
  nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
  for (const OpValue &v : node.inputs) in.push_back(value_json(v));
  for (const OpValue &v : node.outputs) out.push_back(value_json(v));
  return nlohmann::json{{"name", node.name}, {"overload", node.overload}, {"inputs", in}, {"outputs", out}}.dump();
}

}  // namespace pot::dispute
