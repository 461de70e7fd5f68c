// Proof that one tensor belongs to a state (docs/PROTOCOL.md section 5.1):
// the tensor's position among the state's tensors in name order, the tensor
// count, the root over the tensor digests and the RFC 6962 inclusion path.
// A verifier who recomputes the tensor digest from the tensor alone checks it
// against the state digest without seeing any other tensor.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hash/sha256.h"

namespace pot::merkle {

using hash::Digest;

struct TensorProof {
  uint64_t index = 0;   // position in bytewise name order
  uint64_t count = 0;   // tensors in the state
  Digest tensors_root;  // MTH over the tensor digests
  std::vector<Digest> path;

  // u64le index || u64le count || tensors_root || path hashes.
  Bytes encode() const;
  // Strict, bounded decoder (kMalformed, kLimit).
  static TensorProof decode(ByteView b);
};

// kNotFound when the state has no tensor of that name.
TensorProof prove_tensor(const std::map<std::string, Digest> &tensors, const std::string &name);

// Throws kProofMismatch unless tensor_digest is the tensor at proof.index of
// the state whose digest is state_digest (kOutOfRange, kProofLength as
// verify_inclusion).
void verify_tensor(const Digest &state_digest, const Digest &tensor_digest, const TensorProof &proof);

}  // namespace pot::merkle
