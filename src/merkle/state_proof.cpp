#include "merkle/state_proof.h"

#include "common/error.h"
#include "hash/rfc6962.h"
#include "hash/state.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"

namespace pot::merkle {

namespace {
constexpr size_t kHeader = 8 + 8 + 32;
}

Bytes TensorProof::encode() const {
  Bytes out;
  put_u64le(out, index);
  put_u64le(out, count);
  put_bytes(out, tensors_root.view());
  put_bytes(out, encode_proof(path));
  return out;
}

TensorProof TensorProof::decode(ByteView b) {
  if (b.size() < kHeader)
    fail(Status::kMalformed, "tensor proof is {} bytes, shorter than its {}-byte header", b.size(), kHeader);
  TensorProof p;
  p.index = get_u64le(b.data());
  p.count = get_u64le(b.data() + 8);
  p.tensors_root = Digest::from_bytes(b.subspan(16, 32));
  p.path = decode_proof(b.subspan(kHeader));
  return p;
}

TensorProof prove_tensor(const std::map<std::string, Digest> &tensors, const std::string &name) {
  auto it = tensors.find(name);
  if (it == tensors.end()) fail(Status::kNotFound, "the state has no tensor '{}'", name);
  auto tree = StoredTree::in_memory();
  for (const auto &[n, d] : tensors) tree->append(d.view());
  TensorProof p;
  p.index = static_cast<uint64_t>(std::distance(tensors.begin(), it));
  p.count = tensors.size();
  p.tensors_root = tree->root();
  p.path = tree->inclusion_proof(p.index, p.count);
  return p;
}

void verify_tensor(const Digest &state_digest, const Digest &tensor_digest, const TensorProof &proof) {
  if (proof.count > hash::kMaxTensors)
    fail(Status::kLimit, "tensor proof claims {} tensors, the limit is {}", proof.count, hash::kMaxTensors);
  if (hash::state_digest_from_root(proof.count, proof.tensors_root) != state_digest)
    fail(Status::kProofMismatch, "tensor count and root of the proof do not give the state digest");
  verify_inclusion(proof.index, proof.count, hash::leaf_hash(tensor_digest.view()).view(), proof.path,
                   proof.tensors_root.view());
}

}  // namespace pot::merkle
