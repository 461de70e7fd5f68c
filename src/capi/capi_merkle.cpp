// C entry points of the merkle layer: hashes, verification, log and tree.
#include "capi/firewall.h"
#include "merkle/log.h"
#include "merkle/proof.h"
#include "merkle/stored_tree.h"

using namespace pot;
using namespace pot::capi;

struct pot_log {
  merkle::Log log;
};

struct pot_tree {
  std::unique_ptr<merkle::StoredTree> tree;
};

namespace {
std::vector<hash::Digest> proof_arg(const uint8_t *proof, size_t len) {
  return merkle::decode_proof(bytes_arg(proof, len, "proof"));
}
ByteView digest_view(const pot_digest *d, const char *param) {
  return ByteView(need(d, param)->bytes, POT_DIGEST_SIZE);
}
}  // namespace

extern "C" {

pot_status pot_merkle_leaf_hash(pot_digest *out, const void *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, hash::leaf_hash(bytes_arg(data, data_len, "data")));
  });
}

pot_status pot_merkle_node_hash(pot_digest *out, const pot_digest *left, const pot_digest *right,
                                pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, hash::node_hash(to_digest(left, "left"), to_digest(right, "right")));
  });
}

pot_status pot_merkle_verify_inclusion(uint64_t index, uint64_t size, const pot_digest *leaf_hash,
                                       const uint8_t *proof, size_t proof_len,
                                       const pot_digest *root, pot_error **err) {
  return guard(err, [&] {
    merkle::verify_inclusion(index, size, digest_view(leaf_hash, "leaf_hash"),
                             proof_arg(proof, proof_len), digest_view(root, "root"));
  });
}

pot_status pot_merkle_verify_consistency(uint64_t size1, uint64_t size2, const pot_digest *root1,
                                         const pot_digest *root2, const uint8_t *proof,
                                         size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    merkle::verify_consistency(size1, size2, digest_view(root1, "root1"),
                               digest_view(root2, "root2"), proof_arg(proof, proof_len));
  });
}

pot_status pot_log_new(pot_log **out, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = new pot_log{};
  });
}

void pot_log_free(pot_log *log) { delete log; }

pot_status pot_log_append(pot_log *log, const void *data, size_t data_len, pot_error **err) {
  return guard(err, [&] { need(log, "log")->log.append(bytes_arg(data, data_len, "data")); });
}

pot_status pot_log_append_hash(pot_log *log, const pot_digest *leaf_hash, pot_error **err) {
  return guard(err, [&] { need(log, "log")->log.append_hash(to_digest(leaf_hash, "leaf_hash")); });
}

uint64_t pot_log_size(const pot_log *log) { return log ? log->log.size() : 0; }

pot_status pot_log_root(pot_digest *out, const pot_log *log, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(log, "log")->log.root());
  });
}

pot_status pot_log_save(pot_bytes *out, const pot_log *log, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(log, "log")->log.save());
  });
}

pot_status pot_log_load(pot_log **out, const uint8_t *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    merkle::Log log = merkle::Log::load(bytes_arg(data, data_len, "data"));
    *out = new pot_log{std::move(log)};
  });
}

pot_status pot_tree_open(pot_tree **out, const char *path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto tree = path ? merkle::StoredTree::open(path) : merkle::StoredTree::in_memory();
    *out = new pot_tree{std::move(tree)};
  });
}

void pot_tree_free(pot_tree *tree) { delete tree; }

pot_status pot_tree_append(uint64_t *index, pot_tree *tree, const void *data, size_t data_len,
                           pot_error **err) {
  return guard(err, [&] {
    const uint64_t i = need(tree, "tree")->tree->append(bytes_arg(data, data_len, "data"));
    if (index) *index = i;
  });
}

pot_status pot_tree_append_hash(uint64_t *index, pot_tree *tree, const pot_digest *leaf_hash,
                                pot_error **err) {
  return guard(err, [&] {
    const uint64_t i = need(tree, "tree")->tree->append_hash(to_digest(leaf_hash, "leaf_hash"));
    if (index) *index = i;
  });
}

pot_status pot_tree_flush(pot_tree *tree, pot_error **err) {
  return guard(err, [&] { need(tree, "tree")->tree->flush(); });
}

uint64_t pot_tree_size(const pot_tree *tree) { return tree ? tree->tree->size() : 0; }

pot_status pot_tree_root(pot_digest *out, const pot_tree *tree, uint64_t size, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(tree, "tree")->tree->root(size));
  });
}

pot_status pot_tree_leaf_hash(pot_digest *out, const pot_tree *tree, uint64_t index,
                              pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(tree, "tree")->tree->leaf_hash(index));
  });
}

pot_status pot_tree_inclusion_proof(pot_bytes *out, const pot_tree *tree, uint64_t index,
                                    uint64_t size, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, merkle::encode_proof(need(tree, "tree")->tree->inclusion_proof(index, size)));
  });
}

pot_status pot_tree_consistency_proof(pot_bytes *out, const pot_tree *tree, uint64_t size1,
                                      uint64_t size2, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, merkle::encode_proof(need(tree, "tree")->tree->consistency_proof(size1, size2)));
  });
}

}  // extern "C"
