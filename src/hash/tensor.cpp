#include "hash/tensor.h"

#include <algorithm>

#include "common/error.h"
#include "hash/parallel.h"

namespace pot::hash {

namespace {

// Work items are perfect subtrees of at most 2^kBlockLevel chunks (4 MiB).
constexpr unsigned kBlockLevel = 6;

struct Item {
  size_t job;
  Subtree subtree;
};

}  // namespace

void validate_name(std::string_view name) {
  if (name.empty()) fail(Status::kInvalidArgument, "tensor name is empty");
  if (name.size() > kMaxNameBytes)
    fail(Status::kLimit, "tensor name is {} bytes, the limit is {}", name.size(), kMaxNameBytes);
  if (name.find('\0') != std::string_view::npos)
    fail(Status::kInvalidArgument, "tensor name contains a NUL byte");
  if (!is_valid_utf8(name)) fail(Status::kInvalidArgument, "tensor name is not valid UTF-8");
}

uint64_t validate_meta(const TensorMeta &meta) {
  validate_name(meta.name);
  const size_t esize = dtype_size(meta.dtype);
  if (!esize)
    fail(Status::kInvalidArgument, "tensor '{}': unknown dtype code {}", meta.name,
         static_cast<int>(meta.dtype));
  if (meta.shape.size() > kMaxDims)
    fail(Status::kLimit, "tensor '{}' has {} dimensions, the limit is {}", meta.name,
         meta.shape.size(), kMaxDims);
  uint64_t n = esize;
  for (uint64_t d : meta.shape) {
    if (d != 0 && n > UINT64_MAX / d)
      fail(Status::kLimit, "tensor '{}': byte size of the shape overflows 64 bits", meta.name);
    n *= d;
  }
  return n;
}

std::vector<Accumulator> hash_chunks(const std::vector<ChunkJob> &jobs, unsigned threads, const ChunkVisitor &visit) {
  std::vector<Item> items;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const uint64_t first = jobs[j].first_chunk;
    const uint64_t end = first + chunk_count(jobs[j].bytes.size());
    for (const Subtree &s : decompose(first, end)) {
      if (s.level <= kBlockLevel) {
        items.push_back(Item{j, s});
        continue;
      }
      for (uint64_t b = s.start; b < s.end(); b += uint64_t{1} << kBlockLevel)
        items.push_back(Item{j, Subtree{b, kBlockLevel, {}}});
    }
  }
  parallel_for(items.size(), threads, [&](size_t i) {
    Item &it = items[i];
    const ChunkJob &job = jobs[it.job];
    Accumulator acc(it.subtree.start);
    for (uint64_t c = it.subtree.start; c < it.subtree.end(); ++c) {
      const uint64_t off = (c - job.first_chunk) * kChunkSize;
      const uint64_t len = std::min<uint64_t>(kChunkSize, job.bytes.size() - off);
      acc.push_leaf(leaf_hash(job.bytes.data() + off, len));
      if (visit) visit(it.job, c - job.first_chunk, job.bytes.subspan(off, len));
    }
    it.subtree.hash = acc.root();
  });
  std::vector<Accumulator> out;
  out.reserve(jobs.size());
  for (const ChunkJob &job : jobs) out.emplace_back(job.first_chunk);
  for (const Item &it : items) out[it.job].push(it.subtree);
  return out;
}

std::vector<Digest> chunk_roots(const std::vector<ByteView> &tensors, unsigned threads) {
  std::vector<ChunkJob> jobs;
  jobs.reserve(tensors.size());
  for (ByteView t : tensors) jobs.push_back(ChunkJob{t, 0});
  std::vector<Digest> roots;
  roots.reserve(tensors.size());
  for (const Accumulator &acc : hash_chunks(jobs, threads)) roots.push_back(acc.root());
  return roots;
}

Digest tensor_digest(const TensorMeta &meta, uint64_t nbytes, const Digest &chunk_root) {
  Sha256 h;
  begin_tagged(h, kTagTensor);
  h.update_u32le(static_cast<uint32_t>(meta.name.size())).update(meta.name.data(), meta.name.size());
  h.update_u8(static_cast<uint8_t>(meta.dtype));
  h.update_u32le(static_cast<uint32_t>(meta.shape.size()));
  for (uint64_t d : meta.shape) h.update_u64le(d);
  h.update_u64le(nbytes).update_u32le(kChunkSize).update(chunk_root.view());
  return h.finish();
}

Digest tensor_digest(const TensorMeta &meta, ByteView data, unsigned threads) {
  const uint64_t want = validate_meta(meta);
  if (data.size() != want)
    fail(Status::kInvalidArgument, "tensor '{}': {} bytes given, dtype and shape imply {}",
         meta.name, data.size(), want);
  return tensor_digest(meta, want, chunk_roots({data}, threads)[0]);
}

}  // namespace pot::hash
