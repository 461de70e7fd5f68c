// C entry points of the hash layer: tensor and state digests, chunk ranges.
#include <map>

#include "capi/firewall.h"
#include "hash/range.h"
#include "hash/state.h"
#include "merkle/state_proof.h"
#include "statecheck/state_stats.h"

using namespace pot;
using namespace pot::capi;

struct pot_state {
  hash::StateBuilder builder;
  // Each tensor's statistics row (docs/PROTOCOL.md 5.2), by name, computed
  // as it is added; the first tensor added by its digest alone, if any.
  std::map<std::string, statecheck::TensorStats> stats;
  std::string digest_only;
};

struct pot_tensor_assembler {
  hash::TensorAssembler assembler;
};

namespace pot::capi {

hash::TensorMeta tensor_meta(const char *name, pot_dtype dtype, const uint64_t *shape,
                             size_t ndim) {
  hash::TensorMeta meta;
  meta.name = str_arg(name, "name");
  const int code = enum_arg(dtype);
  if (!hash::dtype_valid(code))
    fail(Status::kInvalidArgument, "tensor '{}': {} is not a pot_dtype", meta.name, code);
  meta.dtype = static_cast<hash::DType>(code);
  if (ndim > hash::kMaxDims)
    fail(Status::kLimit, "tensor '{}' has {} dimensions, the limit is {}", meta.name, ndim,
         hash::kMaxDims);
  if (ndim) need(shape, "shape");
  meta.shape.assign(shape, shape + ndim);
  return meta;
}

}  // namespace pot::capi

extern "C" {

size_t pot_dtype_size(pot_dtype dtype) {
  const int code = enum_arg(dtype);
  return hash::dtype_valid(code) ? hash::dtype_size(static_cast<hash::DType>(code)) : 0;
}

const char *pot_dtype_name(pot_dtype dtype) {
  const int code = enum_arg(dtype);
  if (!hash::dtype_valid(code)) return nullptr;
  return hash::dtype_name(static_cast<hash::DType>(code)).data();  // literals: NUL-terminated
}

pot_status pot_dtype_from_name(pot_dtype *out, const char *name, pot_error **err) {
  return guard(err, [&] {
    const std::string_view n = str_arg(name, "name");
    const auto d = hash::dtype_from_name(n);
    if (!d) fail(Status::kUnsupported, "'{}' is not a supported dtype name", n);
    *need(out, "out") = static_cast<pot_dtype>(*d);
  });
}

pot_status pot_tensor_digest(pot_digest *out, const char *name, pot_dtype dtype,
                             const uint64_t *shape, size_t shape_len, const void *data, size_t data_len,
                             uint32_t threads, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const hash::TensorMeta meta = tensor_meta(name, dtype, shape, shape_len);
    from_digest(out, hash::tensor_digest(meta, bytes_arg(data, data_len, "data"), threads));
  });
}

pot_status pot_state_new(pot_state **out, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = new pot_state{};
  });
}

void pot_state_free(pot_state *state) { delete state; }

pot_status pot_state_set_threads(pot_state *state, uint32_t threads, pot_error **err) {
  return guard(err, [&] { need(state, "state")->builder.set_threads(threads); });
}

pot_status pot_state_add_tensor(pot_state *state, const char *name, pot_dtype dtype,
                                const uint64_t *shape, size_t shape_len, const void *data,
                                size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(state, "state");
    const hash::TensorMeta meta = tensor_meta(name, dtype, shape, shape_len);
    const ByteView bytes = bytes_arg(data, data_len, "data");
    state->builder.reserve_name(meta.name);  // a repeated name is refused before the work
    // One read for the tensor's digest and its statistics row.
    statecheck::DigestedState read = statecheck::digest_and_stats({{meta, bytes}}, state->builder.threads());
    state->builder.add_tensor_digest(meta.name, read.tensor_digests.front());
    state->stats[meta.name] = std::move(read.stats.tensors.front());
  });
}

pot_status pot_state_add_tensor_digest(pot_state *state, const char *name,
                                       const pot_digest *tensor_digest, pot_error **err) {
  return guard(err, [&] {
    const std::string n(str_arg(name, "name"));
    need(state, "state")->builder.add_tensor_digest(n, to_digest(tensor_digest, "tensor_digest"));
    if (state->digest_only.empty()) state->digest_only = n;
  });
}

pot_status pot_state_stats(pot_bytes *out, const pot_state *state, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    need(state, "state");
    if (!state->digest_only.empty())
      fail(Status::kState, "tensor '{}' was added by its digest: its statistics are unknown", state->digest_only);
    statecheck::StateStats s;
    for (const auto &[n, row] : state->stats) s.tensors.push_back(row);
    to_bytes(out, s.encode());
  });
}

size_t pot_state_tensor_count(const pot_state *state) { return state ? state->builder.size() : 0; }

pot_status pot_state_digest(pot_digest *out, const pot_state *state, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(state, "state")->builder.digest());
  });
}

pot_status pot_state_tensor_proof(pot_bytes *out, const pot_state *state, const char *name,
                                  pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const std::string n(str_arg(name, "name"));
    to_bytes(out, merkle::prove_tensor(need(state, "state")->builder.tensors(), n).encode());
  });
}

pot_status pot_state_verify_tensor(const pot_digest *state_digest, const pot_digest *tensor_digest,
                                   const uint8_t *proof, size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    merkle::verify_tensor(to_digest(state_digest, "state_digest"), to_digest(tensor_digest, "tensor_digest"),
                          merkle::TensorProof::decode(bytes_arg(proof, proof_len, "proof")));
  });
}

pot_status pot_chunk_range_hash(pot_bytes *out, const void *data, size_t data_len, uint64_t offset,
                                uint64_t total_bytes, uint32_t threads, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const hash::ChunkRange r = hash::hash_range(bytes_arg(data, data_len, "data"), offset, total_bytes, threads);
    to_bytes(out, r.encode());
  });
}

pot_status pot_tensor_assembler_new(pot_tensor_assembler **out, const char *name, pot_dtype dtype,
                                    const uint64_t *shape, size_t shape_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = new pot_tensor_assembler{hash::TensorAssembler(tensor_meta(name, dtype, shape, shape_len))};
  });
}

void pot_tensor_assembler_free(pot_tensor_assembler *assembler) { delete assembler; }

pot_status pot_tensor_assembler_add(pot_tensor_assembler *assembler, const uint8_t *record,
                                    size_t record_len, pot_error **err) {
  return guard(err, [&] {
    need(assembler, "assembler");
    assembler->assembler.add(hash::ChunkRange::decode(bytes_arg(record, record_len, "record")));
  });
}

pot_status pot_tensor_assembler_finish(pot_digest *out, const pot_tensor_assembler *assembler,
                                       pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(assembler, "assembler")->assembler.finish());
  });
}

}  // extern "C"
