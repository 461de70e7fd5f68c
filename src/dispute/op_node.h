// Operator trace nodes (docs/PROTOCOL.md section 22.2), the second phase of
// a refereed dispute: the computation of one training step as the ATen
// operators it ran, in execution order, each node carrying the operator's
// schema name, its arguments (non-tensor values as they are, tensors as
// dtype, shape, strides, the RFC 6962 chunk root of their bytes and where
// the tensor came from) and its results. A trace is the RFC 6962 tree over
// the nodes' leaf hashes; two honest replays of one step under one spec
// give the same nodes, so the same root.
//
// This file is the encoding and its bounded decoder; no LibTorch. The
// recorder is replay/op_recorder.h, the referee dispute/op_referee.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hash/dtype.h"
#include "hash/sha256.h"

namespace pot::dispute {

using hash::Digest;

// Leaf data starts with this tag (u8 length || ASCII), so a node's leaf hash
// is SHA-256(0x00 || u8 14 || "pot/v1/op-node" || body).
inline constexpr std::string_view kOpNodeTag = "pot/v1/op-node";
// The operator name of the trace's last node, which lists S_t.
inline constexpr std::string_view kPostStateOp = "pot::post_state";

// Decoder bounds: a node's encoding, the values of one list, list nesting.
inline constexpr size_t kMaxOpNodeBytes = size_t{1} << 24;
inline constexpr size_t kMaxOpListValues = size_t{1} << 16;
inline constexpr unsigned kMaxOpValueDepth = 8;
inline constexpr size_t kMaxOpStringBytes = 4096;

// Where an input tensor's bytes came from. The recorder names the latest
// earlier node output with the same dtype, shape and chunk root, else the
// pre-state tensor, else the batch tensor with them (in that order); an
// output's source is kNone, and so is an input found nowhere.
enum class SourceKind : uint8_t {
  kNone = 0,
  kNode = 1,    // node `node`, its tensor result number `slot` (depth-first)
  kState = 2,   // tensor `name` of the agreed pre-state S_{t-1}
  kBatch = 3,   // forward argument `name` of micro-batch `slot` (from 0)
  kUninit = 4,  // memory no operator wrote yet (chunk root all zero)
};

struct OpSource {
  SourceKind kind = SourceKind::kNone;
  uint64_t node = 0;
  uint32_t slot = 0;
  std::string name;
  bool operator==(const OpSource &o) const {
    return kind == o.kind && node == o.node && slot == o.slot && name == o.name;
  }
  bool operator!=(const OpSource &o) const { return !(*this == o); }
};

struct OpTensor {
  hash::DType dtype = hash::DType::kF32;
  std::vector<uint64_t> shape;
  std::vector<int64_t> strides;  // in elements, one per dim
  Digest chunk_root;             // of the bytes in logical (row-major) order; zero when kUninit
  OpSource source;
  // Equal content: dtype, shape and chunk root (strides and source aside).
  bool same_content(const OpTensor &o) const {
    return dtype == o.dtype && shape == o.shape && chunk_root == o.chunk_root;
  }
  bool operator==(const OpTensor &o) const {
    return same_content(o) && strides == o.strides && source == o.source;
  }
};

enum class ValueKind : uint8_t {
  kNone = 0,
  kTensor = 1,
  kInt = 2,
  kDouble = 3,  // stored as its bits
  kBool = 4,
  kString = 5,
  kList = 6,
  kDevice = 7,     // string, "cpu"
  kGenerator = 8,  // a random number generator (its state is not in the node)
  kOpaque = 9,     // a value the trace cannot hold: its kind's name in `text`
  kDigest = 10,    // a 32-byte digest (the post-state node's result)
};

struct OpValue {
  ValueKind kind = ValueKind::kNone;
  int64_t integer = 0;  // kInt, kBool (0/1)
  uint64_t bits = 0;    // kDouble
  std::string text;     // kString, kDevice, kOpaque
  std::vector<OpValue> list;
  OpTensor tensor;
  Digest digest;
  bool operator==(const OpValue &o) const;
  bool operator!=(const OpValue &o) const { return !(*this == o); }
};

struct OpNode {
  std::string name;      // schema name, "aten::addmm"
  std::string overload;  // schema overload name, "" or "out", "Tensor", ...
  std::vector<OpValue> inputs;
  std::vector<OpValue> outputs;
  bool operator==(const OpNode &o) const {
    return name == o.name && overload == o.overload && inputs == o.inputs && outputs == o.outputs;
  }
};

// The leaf data: tag || body (docs/PROTOCOL.md 22.2).
Bytes encode_op_node(const OpNode &node);
// Strict inverse: kMalformed for bytes that are not one node (trailing bytes,
// unknown kinds, bad UTF-8), kLimit past a bound.
OpNode decode_op_node(ByteView data);
Digest op_node_leaf_hash(const OpNode &node);

// The tensors of a list of values, depth-first: what a kNode source's slot
// counts.
std::vector<const OpTensor *> op_tensors(const std::vector<OpValue> &values);

// One line for messages: "aten::addmm(Tensor, Tensor, Tensor, 1, 1)".
std::string describe(const OpNode &node);

}  // namespace pot::dispute
