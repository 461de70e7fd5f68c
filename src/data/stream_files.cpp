#include "data/stream_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "hash/rfc6962.h"

namespace pot::data {

namespace {

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_shard(const std::string &path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) fail(Status::kIo, "cannot open shard '{}': {}", path, std::strerror(errno));
  return f;
}

}  // namespace

StreamFiles::StreamFiles(StreamDataset dataset, std::vector<std::string> paths)
    : d_(std::move(dataset)), paths_(std::move(paths)) {
  d_.validate();
  if (paths_.size() != d_.shards.size())
    fail(Status::kInvalidArgument, "{} shard files for a stream of {} shards", paths_.size(), d_.shards.size());
  trees_.resize(paths_.size());
}

const StreamFiles::Tree &StreamFiles::tree(uint32_t s) {
  Tree &t = trees_.at(s);
  if (t.built) return t;
  const std::string &path = paths_[s];
  const uint64_t bytes = d_.shards[s].tokens * d_.token_bytes();
  File f = open_shard(path);
  std::vector<Digest> leaves;
  leaves.reserve((bytes + kStreamChunkSize - 1) / kStreamChunkSize);
  Bytes buf(kStreamChunkSize);
  uint64_t total = 0;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n > 0) leaves.push_back(hash::leaf_hash(buf.data(), n));
    total += n;
    if (n < buf.size()) break;
  }
  if (std::ferror(f.get())) fail(Status::kIo, "cannot read shard '{}'", path);
  if (total != bytes)
    fail(Status::kProofMismatch, "shard file '{}' holds {} bytes, the stream's shard {} has {} tokens ({} bytes)", path,
         total, s, d_.shards[s].tokens, bytes);
  std::vector<std::vector<Digest>> levels;
  levels.push_back(std::move(leaves));
  while (levels.back().size() >= 2) {
    const std::vector<Digest> &below = levels.back();
    std::vector<Digest> up(below.size() / 2);
    for (size_t j = 0; j < up.size(); ++j) up[j] = hash::node_hash(below[2 * j], below[2 * j + 1]);
    levels.push_back(std::move(up));
  }
  // The root folds the decomposition of [0, m) (section 3.1).
  std::vector<hash::Subtree> parts = hash::decompose(0, levels[0].size());
  for (hash::Subtree &p : parts) p.hash = levels[p.level][p.start >> p.level];
  const Digest root = hash::fold_right(parts);
  if (root != d_.shards[s].root)
    fail(Status::kProofMismatch, "shard file '{}' has the root {}, the stream commits shard {} to {}", path, root.hex(), s,
         d_.shards[s].root.hex());
  t.levels = std::move(levels);
  t.built = true;
  return t;
}

Bytes StreamFiles::covered_chunks(const WindowCover &cv) {
  const Tree &t = tree(cv.shard);
  const std::string &path = paths_[cv.shard];
  File f = open_shard(path);
  const uint64_t first = cv.a * kStreamChunkSize, len = cv.chunk_bytes();
  if (std::fseek(f.get(), static_cast<long>(first), SEEK_SET) != 0)
    fail(Status::kIo, "cannot seek in shard '{}': {}", path, std::strerror(errno));
  Bytes chunks(len);
  if (std::fread(chunks.data(), 1, len, f.get()) != len)
    fail(Status::kIo, "cannot read bytes {}..{} of shard '{}'", first, first + len, path);
  for (uint64_t j = cv.a; j < cv.c; ++j) {
    const uint64_t at = (j - cv.a) * kStreamChunkSize;
    const ByteView chunk = ByteView(chunks).subspan(at, std::min<uint64_t>(kStreamChunkSize, len - at));
    if (hash::leaf_hash(chunk) != t.levels[0][j])
      fail(Status::kProofMismatch, "shard file '{}': chunk {} changed since its tree was built", path, j);
  }
  return chunks;
}

Bytes StreamFiles::window_tokens(uint64_t index) {
  const WindowCover cv = window_cover(d_, index);
  const Bytes chunks = covered_chunks(cv);
  const auto begin = chunks.begin() + static_cast<std::ptrdiff_t>(cv.first_byte - cv.a * kStreamChunkSize);
  return Bytes(begin, begin + static_cast<std::ptrdiff_t>(uint64_t{d_.window} * d_.token_bytes()));
}

Bytes StreamFiles::sample(uint64_t index) { return window_sample(d_, window_tokens(index)); }

WindowProof StreamFiles::prove(uint64_t index) {
  const WindowCover cv = window_cover(d_, index);
  WindowProof p;
  p.index = index;
  p.chunks = covered_chunks(cv);
  const Tree &t = tree(cv.shard);
  for (const auto &range : {hash::decompose(0, cv.a), hash::decompose(cv.c, cv.m)})
    for (const hash::Subtree &s : range) p.hashes.push_back(t.levels[s.level][s.start >> s.level]);
  return p;
}

void StreamFiles::check_all() {
  for (uint32_t s = 0; s < trees_.size(); ++s) tree(s);
}

}  // namespace pot::data
