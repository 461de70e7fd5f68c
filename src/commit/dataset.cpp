#include "commit/dataset.h"

#include <algorithm>
#include <numeric>
#include <string_view>

#include "common/error.h"
#include "hash/rfc6962.h"
#include "hash/safetensors.h"
#include "hash/state.h"

namespace pot::commit {

namespace {
constexpr std::string_view kSchedTag = "pot/v1/sched";
constexpr uint64_t kMaxSeededDataset = uint64_t{1} << 27;

// Uniform draws from the tagged stream of (seed, epoch), without modulo bias.
class PermStream {
 public:
  PermStream(uint64_t seed, uint64_t epoch) : seed_(seed), epoch_(epoch) {}
  uint64_t below(uint64_t m) {
    const uint64_t excess = (UINT64_MAX % m + 1) % m;
    for (;;) {
      hash::begin_tagged(h_, "pot/v1/perm");
      const hash::Digest d = h_.update_u64le(seed_).update_u64le(epoch_).update_u64le(counter_++).finish();
      const uint64_t x = get_u64le(d.bytes.data());
      if (excess == 0 || x <= UINT64_MAX - excess) return x % m;
    }
  }

 private:
  uint64_t seed_, epoch_, counter_ = 0;
  hash::Sha256 h_;
};

// A uniform schedule's dataset and batch split (any dataset size >= 1).
void check_uniform(uint64_t dataset_size, uint32_t batch_size, uint32_t microbatches) {
  if (dataset_size == 0) fail(Status::kInvalidArgument, "the dataset is empty");
  if (batch_size == 0 || batch_size > kMaxBatch) fail(Status::kInvalidArgument, "batch size {} is outside 1..2^24", batch_size);
  if (microbatches == 0 || microbatches > kMaxMicrobatches || batch_size % microbatches != 0)
    fail(Status::kInvalidArgument, "{} micro-batches do not split a batch of {} evenly", microbatches, batch_size);
}

// A seeded schedule's: the same, and a dataset a permutation covers.
void check_seeded(uint64_t dataset_size, uint32_t batch_size, uint32_t microbatches) {
  check_uniform(dataset_size, batch_size, microbatches);
  if (dataset_size > kMaxSeededDataset)
    fail(Status::kLimit, "seeded schedules cover at most {} samples, not {}", kMaxSeededDataset, dataset_size);
}

// Walks the index stream perm_0 || perm_1 || ... from position `pos`.
class IndexStream {
 public:
  IndexStream(uint64_t seed, uint64_t n, uint64_t pos) : seed_(seed), n_(n), epoch_(pos / n), at_(pos % n) {
    perm_ = epoch_permutation(seed_, epoch_, n_);
  }
  uint64_t next() {
    if (at_ == n_) {
      perm_ = epoch_permutation(seed_, ++epoch_, n_);
      at_ = 0;
    }
    return perm_[at_++];
  }

 private:
  uint64_t seed_, n_, epoch_, at_;
  std::vector<uint64_t> perm_;
};

// The uniform index stream from position `pos` (docs/PROTOCOL.md 16.3):
// each position's index drawn on its own, without modulo bias.
class UniformStream {
 public:
  UniformStream(uint64_t seed, uint64_t n, uint64_t pos) : seed_(seed), n_(n), pos_(pos) {}
  uint64_t next() {
    const uint64_t excess = (UINT64_MAX % n_ + 1) % n_;  // 2^64 mod n
    for (uint64_t counter = 0;; ++counter) {
      hash::begin_tagged(h_, "pot/v2/uniform");
      const hash::Digest d = h_.update_u64le(seed_).update_u64le(pos_).update_u64le(counter).finish();
      const uint64_t x = get_u64le(d.bytes.data());
      if (excess == 0 || x <= UINT64_MAX - excess) {
        ++pos_;
        return x % n_;
      }
    }
  }

 private:
  uint64_t seed_, n_, pos_;
  hash::Sha256 h_;
};

template <typename Stream>
ScheduleEntry take_entry(Stream &s, uint64_t step, uint32_t batch_size, uint32_t microbatches) {
  ScheduleEntry e;
  e.step = step;
  e.micro.resize(microbatches);
  for (auto &m : e.micro) {
    m.resize(batch_size / microbatches);
    for (uint64_t &x : m) x = s.next();
  }
  return e;
}

// Entry `step` of the stream's schedule: positions (step - 1) * B .. step * B - 1.
template <typename Stream>
ScheduleEntry entry_at(uint64_t seed, uint64_t n, uint32_t batch_size, uint32_t microbatches, uint64_t step) {
  if (step == 0) fail(Status::kInvalidArgument, "schedule entries are numbered from step 1");
  if (step - 1 > UINT64_MAX / batch_size) fail(Status::kOutOfRange, "step {} overflows the index stream", step);
  Stream s(seed, n, (step - 1) * batch_size);
  return take_entry(s, step, batch_size, microbatches);
}

template <typename Stream>
void positions(uint64_t seed, uint64_t n, uint64_t first, uint64_t *out, size_t count) {
  if (count > UINT64_MAX - first) fail(Status::kOutOfRange, "positions {} + {} overflow the index stream", first, count);
  Stream s(seed, n, first);
  for (size_t i = 0; i < count; ++i) out[i] = s.next();
}

template <typename Stream>
hash::Digest root_of(uint64_t seed, uint64_t n, uint32_t batch_size, uint32_t microbatches, uint64_t steps) {
  if (steps > UINT64_MAX / batch_size) fail(Status::kOutOfRange, "{} steps overflow the index stream", steps);
  hash::Accumulator acc;
  Stream s(seed, n, 0);
  for (uint64_t t = 1; t <= steps; ++t) acc.push_leaf(hash::leaf_hash(take_entry(s, t, batch_size, microbatches).encode()));
  return acc.root();
}

}  // namespace

hash::Digest sample_digest(ByteView safetensors_bytes) {
  if (safetensors_bytes.size() > kMaxSampleBytes)
    fail(Status::kLimit, "sample of {} bytes, the limit is {}", safetensors_bytes.size(), kMaxSampleBytes);
  const auto f = hash::SafetensorsFile::from_bytes(safetensors_bytes);
  if (f->size() == 0) fail(Status::kMalformed, "a sample holds no tensor");
  return hash::tensor_set_digest("pot/v1/sample", f->tensor_digests(1));
}

Bytes ScheduleEntry::encode(uint64_t dataset_size) const {
  if (step == 0) fail(Status::kInvalidArgument, "schedule entries are numbered from step 1");
  if (micro.empty() || micro.size() > kMaxMicrobatches)
    fail(Status::kInvalidArgument, "step {}: {} micro-batches, expected 1..{}", step, micro.size(), kMaxMicrobatches);
  size_t total = 0;
  for (const auto &m : micro) {
    if (m.empty()) fail(Status::kInvalidArgument, "step {}: an empty micro-batch", step);
    total += m.size();
    for (uint64_t i : m)
      if (dataset_size && i >= dataset_size)
        fail(Status::kOutOfRange, "step {}: dataset index {} is not below the dataset size {}", step, i, dataset_size);
  }
  if (total > kMaxBatch) fail(Status::kLimit, "step {}: {} samples, the limit is 2^24", step, total);
  Bytes out;
  out.reserve(1 + kSchedTag.size() + 12 + 4 * micro.size() + 8 * total);
  put_u8(out, static_cast<uint8_t>(kSchedTag.size()));
  put_str(out, kSchedTag);
  put_u64le(out, step);
  put_u32le(out, static_cast<uint32_t>(micro.size()));
  for (const auto &m : micro) {
    put_u32le(out, static_cast<uint32_t>(m.size()));
    for (uint64_t i : m) put_u64le(out, i);
  }
  return out;
}

ScheduleEntry ScheduleEntry::decode(ByteView b) {
  const size_t head = 1 + kSchedTag.size() + 12;
  if (b.size() < head) fail(Status::kMalformed, "schedule entry of {} bytes is shorter than its header", b.size());
  if (b[0] != kSchedTag.size() || !std::equal(kSchedTag.begin(), kSchedTag.end(), b.begin() + 1))
    fail(Status::kMalformed, "schedule entry does not start with the tag '{}'", kSchedTag);
  ScheduleEntry e;
  size_t at = 1 + kSchedTag.size();
  e.step = get_u64le(&b[at]);
  const uint32_t nmicro = get_u32le(&b[at + 8]);
  at += 12;
  if (nmicro == 0 || nmicro > kMaxMicrobatches)
    fail(Status::kMalformed, "schedule entry declares {} micro-batches", nmicro);
  // Each micro-batch takes at least 12 bytes: refuse a count the input cannot
  // hold before allocating for it (decoding allocates in proportion to the input).
  if (nmicro > (b.size() - at) / 12)
    fail(Status::kMalformed, "schedule entry declares {} micro-batches where {} bytes remain", nmicro, b.size() - at);
  uint64_t total = 0;
  e.micro.resize(nmicro);
  for (auto &m : e.micro) {
    if (b.size() - at < 4) fail(Status::kMalformed, "schedule entry ends inside a micro-batch header");
    const uint32_t count = get_u32le(&b[at]);
    at += 4;
    total += count;
    if (total > kMaxBatch) fail(Status::kLimit, "schedule entry holds more than 2^24 indices");
    if (count == 0 || (b.size() - at) / 8 < count)
      fail(Status::kMalformed, "schedule entry declares {} indices where {} bytes remain", count, b.size() - at);
    m.resize(count);
    for (uint64_t &i : m) {
      i = get_u64le(&b[at]);
      at += 8;
    }
  }
  if (at != b.size()) fail(Status::kMalformed, "schedule entry has {} trailing bytes", b.size() - at);
  if (e.encode() != Bytes(b.begin(), b.end())) fail(Status::kMalformed, "schedule entry is not canonical");
  return e;
}

std::vector<uint64_t> ScheduleEntry::indices() const {
  std::vector<uint64_t> out;
  for (const auto &m : micro) out.insert(out.end(), m.begin(), m.end());
  return out;
}

std::vector<uint64_t> epoch_permutation(uint64_t seed, uint64_t epoch, uint64_t n) {
  if (n > kMaxSeededDataset) fail(Status::kLimit, "permutation of {} elements, the limit is {}", n, kMaxSeededDataset);
  std::vector<uint64_t> perm(n);
  std::iota(perm.begin(), perm.end(), uint64_t{0});
  PermStream s(seed, epoch);
  for (uint64_t i = n; i-- > 1;) std::swap(perm[i], perm[s.below(i + 1)]);
  return perm;
}

ScheduleEntry seeded_schedule_entry(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                    uint32_t microbatches, uint64_t step) {
  check_seeded(dataset_size, batch_size, microbatches);
  return entry_at<IndexStream>(seed, dataset_size, batch_size, microbatches, step);
}

void seeded_schedule_stream(uint64_t seed, uint64_t dataset_size, uint64_t first, uint64_t *out, size_t count) {
  check_seeded(dataset_size, 1, 1);
  positions<IndexStream>(seed, dataset_size, first, out, count);
}

hash::Digest seeded_schedule_root(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                  uint32_t microbatches, uint64_t steps) {
  check_seeded(dataset_size, batch_size, microbatches);
  return root_of<IndexStream>(seed, dataset_size, batch_size, microbatches, steps);
}

ScheduleEntry uniform_schedule_entry(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                     uint32_t microbatches, uint64_t step) {
  check_uniform(dataset_size, batch_size, microbatches);
  return entry_at<UniformStream>(seed, dataset_size, batch_size, microbatches, step);
}

void uniform_schedule_stream(uint64_t seed, uint64_t dataset_size, uint64_t first, uint64_t *out, size_t count) {
  check_uniform(dataset_size, 1, 1);
  positions<UniformStream>(seed, dataset_size, first, out, count);
}

hash::Digest uniform_schedule_root(uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                   uint32_t microbatches, uint64_t steps) {
  check_uniform(dataset_size, batch_size, microbatches);
  return root_of<UniformStream>(seed, dataset_size, batch_size, microbatches, steps);
}

}  // namespace pot::commit
