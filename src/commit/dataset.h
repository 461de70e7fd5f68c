// Dataset and schedule commitments (docs/PROTOCOL.md sections 15 and 16).
//
// A sample is a small set of named tensors, carried as safetensors bytes; its
// digest is built like a state digest under its own tag. The dataset root is
// the RFC 6962 root over sample digests (leaf data = the 32-byte digest), so
// one sample is proven with an inclusion proof.
//
// The schedule assigns each step the ordered dataset indices of its batch,
// split into micro-batches. Entry t is leaf t - 1 of the schedule tree.
#pragma once

#include <vector>

#include "hash/sha256.h"

namespace pot::commit {

inline constexpr size_t kMaxSampleBytes = size_t{64} << 20;  // one sample's payload
inline constexpr uint32_t kMaxBatch = 1u << 24;
inline constexpr uint32_t kMaxMicrobatches = 65536;

// tagged("pot/v1/sample", u64le(count) || MTH(tensor digests in name order))
// of the tensors in a safetensors payload. kMalformed/kLimit as the reader.
hash::Digest sample_digest(ByteView safetensors_bytes);

struct ScheduleEntry {
  uint64_t step = 0;                          // 1-based
  std::vector<std::vector<uint64_t>> micro;   // micro-batches of dataset indices, in order

  // u8(12) "pot/v1/sched" u64le(step) u32le(#micro) then per micro-batch
  // u32le(count) count x u64le(index). Validates: step >= 1, 1..65536
  // micro-batches, none empty, at most 2^24 indices in all, each index below
  // dataset_size (when dataset_size != 0).
  Bytes encode(uint64_t dataset_size = 0) const;
  static ScheduleEntry decode(ByteView b);  // strict (kMalformed, kLimit)
  std::vector<uint64_t> indices() const;   // all micro-batches concatenated
};

// The seeded schedule: an epoch-wise permutation of the dataset from a
// committed seed (docs/PROTOCOL.md section 16.2). Entry t takes the next
// batch_size indices of the stream perm_0 || perm_1 || ..., split into
// `microbatches` equal micro-batches (batch_size must be a multiple).
ScheduleEntry seeded_schedule_entry(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                    uint32_t microbatches, uint64_t step);
// Root of the seeded schedule of `steps` entries.
hash::Digest seeded_schedule_root(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                  uint32_t microbatches, uint64_t steps);
// Positions first .. first + count - 1 of the index stream
// perm_0 || perm_1 || ... of the seeded schedule, written to out (a caller
// splitting them into steps and micro-batches gets the entries).
void seeded_schedule_stream(uint64_t seed, uint64_t dataset_size, uint64_t first, uint64_t *out, size_t count);
// The uniform seeded schedule (docs/PROTOCOL.md 16.3): stream position p
// is an index drawn uniformly from [0, dataset_size) by the tagged hash of
// (seed, p), independently of every other position (with replacement, any
// dataset size >= 1). Entries take the stream's positions as the seeded
// schedule's do. An entry costs batch_size draws, whatever the step.
ScheduleEntry uniform_schedule_entry(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                     uint32_t microbatches, uint64_t step);
hash::Digest uniform_schedule_root(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                   uint32_t microbatches, uint64_t steps);
void uniform_schedule_stream(uint64_t seed, uint64_t dataset_size, uint64_t first, uint64_t *out, size_t count);

// Permutation of [0, n) for an epoch (Fisher-Yates, unbiased draws).
std::vector<uint64_t> epoch_permutation(uint64_t seed, uint64_t epoch, uint64_t n);

}  // namespace pot::commit
