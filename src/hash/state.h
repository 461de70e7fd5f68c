// Canonical state digests (docs/PROTOCOL.md section 4): the tensor digests of
// a state, in bytewise name order, are the leaves of an RFC 6962 tree whose
// root is bound with the tensor count under a domain tag.
#pragma once

#include <map>
#include <string>

#include "hash/tensor.h"

namespace pot::hash {

inline constexpr size_t kMaxTensors = size_t{1} << 20;  // tensors per state

class StateBuilder {
 public:
  StateBuilder() = default;  // not explicit: aggregates holding one value-initialise it with {}
  explicit StateBuilder(unsigned threads) : threads_(threads) {}

  void set_threads(unsigned threads) { threads_ = threads; }
  unsigned threads() const { return threads_; }

  // Digests the tensor now (the bytes are not kept). kDuplicate when the name
  // is already present; kInvalidArgument/kLimit as validate_meta.
  void add_tensor(const TensorMeta &meta, ByteView data);
  // Adds a tensor digest computed elsewhere (a rank of a sharded run).
  void add_tensor_digest(const std::string &name, const Digest &digest);
  // Throws as adding a tensor of this name would (invalid name, kDuplicate,
  // kLimit), without adding it: a check before costly work.
  void reserve_name(const std::string &name) const;

  size_t size() const { return tensors_.size(); }
  const std::map<std::string, Digest> &tensors() const { return tensors_; }
  Digest digest() const;

 private:
  unsigned threads_ = 0;
  std::map<std::string, Digest> tensors_;  // std::less<string>: bytewise order
};

// The state digest of tensor digests already in canonical name order.
Digest state_digest(const std::map<std::string, Digest> &tensors);
// tagged("pot/v1/state", u64le(count) || tensors_root).
Digest state_digest_from_root(uint64_t count, const Digest &tensors_root);
// The same construction under another tag (samples use "pot/v1/sample").
Digest tensor_set_digest(std::string_view tag, const std::map<std::string, Digest> &tensors);

}  // namespace pot::hash
