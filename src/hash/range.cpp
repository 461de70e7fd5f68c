#include "hash/range.h"

#include "common/error.h"

namespace pot::hash {

namespace {
constexpr uint8_t kRangeVersion = 1;
constexpr size_t kRangeHeader = 1 + 8 + 8 + 8 + 4;

void check_range(uint64_t offset, uint64_t length, uint64_t total) {
  if (offset > total || length > total - offset)
    fail(Status::kInvalidArgument, "range [{}, +{}) leaves a tensor of {} bytes", offset, length,
         total);
  if (offset % kChunkSize != 0)
    fail(Status::kInvalidArgument, "range offset {} is not a multiple of the chunk size {}",
         offset, kChunkSize);
  if (offset + length != total && length % kChunkSize != 0)
    fail(Status::kInvalidArgument,
         "range length {} is not a multiple of the chunk size {} and does not end the tensor",
         length, kChunkSize);
  if (length == 0 && total != 0)
    fail(Status::kInvalidArgument, "empty range of a non-empty tensor");
}
}  // namespace

Bytes ChunkRange::encode() const {
  Bytes out;
  out.reserve(kRangeHeader + subtrees.size() * kDigestSize);
  put_u8(out, kRangeVersion);
  put_u64le(out, total_bytes);
  put_u64le(out, offset);
  put_u64le(out, length);
  put_u32le(out, static_cast<uint32_t>(subtrees.size()));
  for (const Subtree &s : subtrees) put_bytes(out, s.hash.view());
  return out;
}

ChunkRange ChunkRange::decode(ByteView b) {
  if (b.size() < kRangeHeader)
    fail(Status::kMalformed, "chunk range is {} bytes, shorter than its {}-byte header", b.size(),
         kRangeHeader);
  if (b[0] != kRangeVersion)
    fail(Status::kMalformed, "chunk range version {} is not {}", b[0], kRangeVersion);
  ChunkRange r;
  r.total_bytes = get_u64le(&b[1]);
  r.offset = get_u64le(&b[9]);
  r.length = get_u64le(&b[17]);
  const uint32_t count = get_u32le(&b[25]);
  try {
    check_range(r.offset, r.length, r.total_bytes);
  } catch (const Error &e) {
    throw Error(Status::kMalformed, std::string("chunk range: ") + e.what());
  }
  const uint64_t first = r.offset / kChunkSize;
  r.subtrees = decompose(first, first + chunk_count(r.length));
  if (count != r.subtrees.size() || b.size() - kRangeHeader != uint64_t{count} * kDigestSize)
    fail(Status::kMalformed, "chunk range holds {} bytes of hashes for {} declared, {} expected",
         b.size() - kRangeHeader, count, r.subtrees.size());
  for (size_t i = 0; i < r.subtrees.size(); ++i)
    r.subtrees[i].hash = Digest::from_bytes(b.subspan(kRangeHeader + i * kDigestSize, kDigestSize));
  return r;
}

ChunkRange hash_range(ByteView data, uint64_t offset, uint64_t total_bytes, unsigned threads) {
  check_range(offset, data.size(), total_bytes);
  ChunkRange r;
  r.total_bytes = total_bytes;
  r.offset = offset;
  r.length = data.size();
  r.subtrees = hash_chunks({ChunkJob{data, offset / kChunkSize}}, threads)[0].subtrees();
  return r;
}

TensorAssembler::TensorAssembler(TensorMeta meta) : meta_(std::move(meta)) {
  nbytes_ = validate_meta(meta_);
}

void TensorAssembler::add(const ChunkRange &range) {
  if (range.total_bytes != nbytes_)
    fail(Status::kInvalidArgument, "range of a {}-byte tensor given for '{}' of {} bytes",
         range.total_bytes, meta_.name, nbytes_);
  auto next = ranges_.lower_bound(range.offset);
  if (next != ranges_.end() && next->first < range.offset + std::max<uint64_t>(range.length, 1))
    fail(Status::kInvalidArgument, "range at offset {} overlaps the range at offset {}",
         range.offset, next->first);
  if (next != ranges_.begin()) {
    const ChunkRange &prev = std::prev(next)->second;
    if (prev.offset + std::max<uint64_t>(prev.length, 1) > range.offset)
      fail(Status::kInvalidArgument, "range at offset {} overlaps the range at offset {}",
           range.offset, prev.offset);
  }
  ranges_.emplace(range.offset, range);
}

Digest TensorAssembler::finish() const {
  Accumulator acc;
  uint64_t covered = 0;
  for (const auto &[offset, r] : ranges_) {
    if (offset != covered)
      fail(Status::kInvalidArgument, "tensor '{}': bytes [{}, {}) have no range", meta_.name,
           covered, offset);
    for (const Subtree &s : r.subtrees) acc.push(s);
    covered = offset + r.length;
  }
  if (covered != nbytes_)
    fail(Status::kInvalidArgument, "tensor '{}': bytes [{}, {}) have no range", meta_.name,
         covered, nbytes_);
  return tensor_digest(meta_, nbytes_, acc.root());
}

}  // namespace pot::hash
