#include "hash/state.h"

#include "common/error.h"

namespace pot::hash {

void StateBuilder::reserve_name(const std::string &name) const {
  validate_name(name);
  if (tensors_.count(name)) fail(Status::kDuplicate, "tensor '{}' is already in the state", name);
  if (tensors_.size() >= kMaxTensors)
    fail(Status::kLimit, "a state holds at most {} tensors", kMaxTensors);
}

void StateBuilder::add_tensor(const TensorMeta &meta, ByteView data) {
  reserve_name(meta.name);
  tensors_.emplace(meta.name, tensor_digest(meta, data, threads_));
}

void StateBuilder::add_tensor_digest(const std::string &name, const Digest &digest) {
  reserve_name(name);
  tensors_.emplace(name, digest);
}

Digest StateBuilder::digest() const { return state_digest(tensors_); }

Digest tensor_set_digest(std::string_view tag, const std::map<std::string, Digest> &tensors) {
  Accumulator acc;
  for (const auto &[name, d] : tensors) acc.push_leaf(leaf_hash(d.view()));
  Sha256 h;
  begin_tagged(h, tag);
  h.update_u64le(tensors.size()).update(acc.root().view());
  return h.finish();
}

Digest state_digest(const std::map<std::string, Digest> &tensors) { return tensor_set_digest(kTagState, tensors); }

Digest state_digest_from_root(uint64_t count, const Digest &tensors_root) {
  Sha256 h;
  begin_tagged(h, kTagState);
  h.update_u64le(count).update(tensors_root.view());
  return h.finish();
}

}  // namespace pot::hash
