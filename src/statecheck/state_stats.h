// Per-tensor statistics of a training state (docs/PROTOCOL.md 5.2): for each
// tensor, in the state digest's name order, its element count, the largest
// magnitude, the L2 norm and the counts of non-finite, subnormal and zero
// elements. They are a function of the state's bytes, computed over the
// same 64 KiB chunks as the tensor digest with a fixed order of every
// floating-point addition, so every implementation gets the same bits on
// any thread count. A table is small (about 60 bytes a tensor) where a state
// is gigabytes: the rules of state_flags.h read two consecutive tables to
// find the steps that honest training does not take.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hash/safetensors.h"

namespace pot::statecheck {

// tagged("pot/v1/state-stats", table bytes).
inline constexpr std::string_view kTagStateStats = "pot/v1/state-stats";
// The largest table file a reader loads (a state of about a million tensors).
inline constexpr uint64_t kMaxTableBytes = uint64_t{64} << 20;
// Interleaved partial sums of squares within one chunk (PROTOCOL 5.2).
inline constexpr size_t kSumLanes = 32;

struct TensorStats {
  std::string name;
  hash::DType dtype = hash::DType::kF32;
  uint64_t elements = 0;
  // Floating-point tensors only (0 for the others): the largest |x| of a
  // finite element, and the L2 norm over the finite elements, both binary64.
  double max_abs = 0;
  double l2_norm = 0;
  uint64_t nonfinite = 0;  // NaN or infinite elements (floating-point types)
  uint64_t subnormal = 0;  // as check 28 counts them: BF16, F32, F64
  uint64_t zeros = 0;      // +0 and -0 (floating point), all bits zero (the others)

  bool operator==(const TensorStats &) const = default;
};

struct StateStats {
  std::vector<TensorStats> tensors;  // bytewise name order, names unique

  // u32le(count) || per tensor: u32le(len(name)) || name || u8(dtype) ||
  // u64le(elements) || u64le(bits(max_abs)) || u64le(bits(l2_norm)) ||
  // u64le(nonfinite) || u64le(subnormal) || u64le(zeros).
  Bytes encode() const;
  // Strict: exactly what encode() produces for a table that statistics of
  // some state could be (names in order, counts within the element count,
  // magnitudes finite and not negative, zero for types that are not
  // floating point); kMalformed or kLimit otherwise, before allocating past
  // what the bytes can hold.
  static StateStats decode(ByteView b);
  hash::Digest digest() const;
  // {"tensors": [{"name", "dtype", "elements", "max_abs", "l2_norm",
  // "nonfinite", "subnormal", "zeros"}, ...], "digest": hex}
  std::string to_json() const;
  const TensorStats *find(std::string_view name) const;
  // Whether some tensor's count (&TensorStats::nonfinite, ::subnormal,
  // ::zeros) is not zero: whether a scan that names the value need run.
  bool any(uint64_t TensorStats::*count) const;

  bool operator==(const StateStats &) const = default;
};

// tagged("pot/v1/state-stats", table): the digest of a table's bytes, as
// StateStats::digest() of the table they encode.
hash::Digest table_digest(ByteView table);


// The statistics of the tensors (which must be in bytewise name order, as a
// safetensors file's are) on `threads` threads (0 = every core); the result
// does not depend on the thread count.
StateStats state_stats(const std::vector<hash::StTensor> &tensors, unsigned threads);
StateStats state_stats(const hash::SafetensorsFile &file, unsigned threads);
// For tests: runs one chunk of F32 or BF16 elements (at most one chunk)
// through every vector path this CPU has (baseline, AVX2, AVX-512) and
// returns their names; kInternal when one path's result differs in a bit.
std::vector<std::string> kernel_paths_agree(hash::DType d, ByteView bytes);

// The tensors' digests (docs/PROTOCOL.md 3, in their order) and their
// statistics, from one read of the bytes: each chunk's share of the
// statistics is computed right after the chunk is hashed. The same bits as
// hash::tensor_digest and state_stats, on any thread count.
struct DigestedState {
  std::vector<hash::Digest> tensor_digests;
  StateStats stats;
};
DigestedState digest_and_stats(const std::vector<hash::StTensor> &tensors, unsigned threads);

// One tensor's row (as state_stats computes it).
TensorStats tensor_stats(const hash::StTensor &tensor, unsigned threads);

}  // namespace pot::statecheck
