// A recorded operator trace (docs/PROTOCOL.md 22.2): the encoded nodes of
// one step and the RFC 6962 tree over their leaf hashes, which serves the
// prefix roots the operator bisection claims and the proofs that open a
// node against them. No LibTorch: replay/op_recorder.h records the nodes.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "dispute/op_node.h"
#include "merkle/stored_tree.h"

namespace pot::dispute {

class OpTrace {
 public:
  explicit OpTrace(const std::vector<OpNode> &nodes);

  uint64_t size() const { return nodes_.size(); }
  // MTH of the first `size` nodes (size <= size(); the empty root at 0).
  Digest root(uint64_t size) const;
  // Node `index`'s leaf data (encode_op_node); kOutOfRange past the last.
  const Bytes &node(uint64_t index) const;
  // RFC 6962 proofs over the node leaves (kOutOfRange as StoredTree).
  std::vector<Digest> inclusion_proof(uint64_t index, uint64_t size) const;
  std::vector<Digest> consistency_proof(uint64_t size1, uint64_t size2) const;

 private:
  std::vector<Bytes> nodes_;
  std::unique_ptr<merkle::StoredTree> tree_;
};

// A node as JSON (docs/PROTOCOL.md 22.2 names the fields), for people and
// tools; the leaf data stays the binary encoding.
std::string op_node_json(const OpNode &node);
// Its strict inverse: every field present, of its type, nothing else (a
// double's "bits" decide; its "double" is informative). kMalformed naming
// the field otherwise; the node's bounds as decode_op_node.
OpNode op_node_from_json(const nlohmann::json &j);

}  // namespace pot::dispute
