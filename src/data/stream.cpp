#include "data/stream.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/byte_reader.h"
#include "common/error.h"
#include "hash/rfc6962.h"
#include "hash/safetensors.h"
#include "hash/tensor.h"

namespace pot::data {

namespace {

uint64_t chunk_count(uint64_t bytes) { return (bytes + kStreamChunkSize - 1) / kStreamChunkSize; }

// The windows of W tokens a shard holds: max(0, tokens - W + 1).
uint64_t windows_of(const StreamShard &s, uint32_t window) {
  return s.tokens >= window ? s.tokens - window + 1 : 0;
}

// Both records start with the version byte (15.1).
void read_version(ByteReader &r, const char *record) {
  const uint8_t version = r.u8("version");
  if (version != kStreamVersion)
    fail(Status::kUnsupported, "{}: version {} (this pot reads version {})", record, version, kStreamVersion);
}

}  // namespace

uint32_t StreamDataset::token_bytes() const { return token_dtype == hash::DType::kU32 ? 4 : 2; }

uint64_t StreamDataset::sample_bytes() const {
  uint64_t n = 0;
  for (const StreamView &v : views) n += v.length;
  return n * (output_dtype == hash::DType::kI32 ? 4 : 8);
}

WindowCover window_cover(const StreamDataset &d, uint64_t index) {
  const auto [s, o] = d.locate(index);
  const uint64_t b = d.token_bytes();
  WindowCover cv;
  cv.shard = s;
  cv.first_byte = o * b;
  cv.shard_bytes = d.shards[s].tokens * b;
  cv.a = cv.first_byte / kStreamChunkSize;
  cv.c = chunk_count(cv.first_byte + uint64_t{d.window} * b);
  cv.m = chunk_count(cv.shard_bytes);
  return cv;
}

void StreamDataset::validate() const {
  if (token_dtype != hash::DType::kU16 && token_dtype != hash::DType::kU32)
    fail(Status::kInvalidArgument, "stream.token_dtype: {} is not U16 or U32", hash::dtype_name(token_dtype));
  if (output_dtype != hash::DType::kI32 && output_dtype != hash::DType::kI64)
    fail(Status::kInvalidArgument, "stream.output_dtype: {} is not I32 or I64", hash::dtype_name(output_dtype));
  if (window < 2) fail(Status::kInvalidArgument, "stream.window: {} tokens, at least 2", window);
  if (window > kMaxWindow) fail(Status::kLimit, "stream.window: {} tokens, at most {}", window, kMaxWindow);
  if (views.empty()) fail(Status::kInvalidArgument, "stream.views: none (a window gives at least one tensor)");
  if (views.size() > kMaxViews) fail(Status::kLimit, "stream.views: {}, at most {}", views.size(), kMaxViews);
  for (size_t i = 0; i < views.size(); ++i) {
    const StreamView &v = views[i];
    hash::TensorMeta meta{v.name, output_dtype, {v.length}};
    hash::validate_meta(meta);  // the name's rules (section 4)
    if (v.length == 0) fail(Status::kInvalidArgument, "stream.views[{}] '{}': length 0", i, v.name);
    if (uint64_t{v.start} + v.length > window)
      fail(Status::kInvalidArgument, "stream.views[{}] '{}': tokens [{}, {}) leave the window of {}", i, v.name,
           v.start, uint64_t{v.start} + v.length, window);
    if (i > 0 && !(views[i - 1].name < v.name))
      fail(Status::kInvalidArgument, "stream.views: '{}' after '{}' (names strictly increasing, bytewise)", v.name,
           views[i - 1].name);
  }
  if (sample_bytes() > kMaxStreamSampleBytes)
    fail(Status::kLimit, "stream.views: a window's sample would hold {} bytes of tensor data, at most {}",
         sample_bytes(), kMaxStreamSampleBytes);
  if (shards.empty()) fail(Status::kInvalidArgument, "stream.shards: none");
  if (shards.size() > kMaxShards) fail(Status::kLimit, "stream.shards: {}, at most {}", shards.size(), kMaxShards);
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].tokens == 0) fail(Status::kInvalidArgument, "stream.shards[{}]: no token", i);
    if (shards[i].tokens > kMaxShardTokens)
      fail(Status::kLimit, "stream.shards[{}]: {} tokens, at most 2^40", i, shards[i].tokens);
  }
  if (size() == 0)
    fail(Status::kInvalidArgument, "stream: no shard holds a window of {} tokens (the dataset would be empty)",
         window);
}

Bytes StreamDataset::encode() const {
  validate();
  Bytes out;
  put_u8(out, kStreamVersion);
  put_u8(out, static_cast<uint8_t>(token_dtype));
  put_u8(out, static_cast<uint8_t>(output_dtype));
  put_u32le(out, window);
  put_u32le(out, static_cast<uint32_t>(views.size()));
  for (const StreamView &v : views) {
    put_u32le(out, static_cast<uint32_t>(v.name.size()));
    put_str(out, v.name);
    put_u32le(out, v.start);
    put_u32le(out, v.length);
  }
  put_u32le(out, static_cast<uint32_t>(shards.size()));
  for (const StreamShard &s : shards) {
    put_u64le(out, s.tokens);
    put_bytes(out, s.root.bytes);
  }
  return out;
}

StreamDataset StreamDataset::decode(ByteView bytes) {
  ByteReader r(bytes, "stream dataset");
  read_version(r, "stream dataset");
  StreamDataset d;
  d.token_dtype = static_cast<hash::DType>(r.u8("token_dtype"));
  d.output_dtype = static_cast<hash::DType>(r.u8("output_dtype"));
  d.window = r.u32("window");
  const uint32_t nv = r.u32("view count");
  if (nv > kMaxViews) fail(Status::kLimit, "stream dataset: {} views, at most {}", nv, kMaxViews);
  for (uint32_t i = 0; i < nv; ++i) {
    StreamView v;
    const uint32_t len = r.u32("view name length");
    if (len > hash::kMaxNameBytes)
      fail(Status::kLimit, "stream dataset: view name of {} bytes, at most {}", len, hash::kMaxNameBytes);
    const ByteView name = r.take(len, "view name");
    v.name.assign(name.begin(), name.end());
    v.start = r.u32("view start");
    v.length = r.u32("view length");
    d.views.push_back(std::move(v));
  }
  const uint32_t ns = r.u32("shard count");
  if (ns > kMaxShards) fail(Status::kLimit, "stream dataset: {} shards, at most {}", ns, kMaxShards);
  if (uint64_t{ns} * 40 > r.remaining())
    fail(Status::kMalformed, "stream dataset: {} shards need {} bytes, {} remain", ns, uint64_t{ns} * 40,
         r.remaining());
  d.shards.resize(ns);
  for (StreamShard &s : d.shards) {
    s.tokens = r.u64("shard tokens");
    const ByteView root = r.take(32, "shard root");
    std::memcpy(s.root.bytes.data(), root.data(), 32);
  }
  if (r.remaining())
    fail(Status::kMalformed, "stream dataset: {} bytes after the last shard", r.remaining());
  d.validate();
  return d;
}

Digest StreamDataset::root() const {
  const Bytes enc = encode();
  hash::Sha256 h;
  hash::begin_tagged(h, kTagStream);
  h.update(enc);
  return h.finish();
}

uint64_t StreamDataset::size() const {
  uint64_t n = 0;
  for (const StreamShard &s : shards) n += windows_of(s, window);
  return n;
}

std::pair<uint32_t, uint64_t> StreamDataset::locate(uint64_t index) const {
  uint64_t i = index;
  for (uint32_t s = 0; s < shards.size(); ++s) {
    const uint64_t windows = windows_of(shards[s], window);
    if (i < windows) return {s, i};
    i -= windows;
  }
  fail(Status::kOutOfRange, "window {} of a stream of {} windows", index, size());
}

Digest shard_root(ByteView bytes, uint32_t token_bytes) {
  if (bytes.empty()) fail(Status::kInvalidArgument, "a shard holds at least one token");
  if (bytes.size() % token_bytes)
    fail(Status::kInvalidArgument, "a shard of {} bytes does not hold whole {}-byte tokens", bytes.size(),
         token_bytes);
  hash::Accumulator acc;
  for (size_t at = 0; at < bytes.size(); at += kStreamChunkSize)
    acc.push_leaf(hash::leaf_hash(bytes.subspan(at, std::min<size_t>(kStreamChunkSize, bytes.size() - at))));
  return acc.root();
}

Bytes WindowProof::encode() const {
  Bytes out;
  put_u8(out, kStreamVersion);
  put_u64le(out, index);
  put_u32le(out, static_cast<uint32_t>(chunks.size()));
  put_bytes(out, chunks);
  put_u32le(out, static_cast<uint32_t>(hashes.size()));
  for (const Digest &h : hashes) put_bytes(out, h.bytes);
  return out;
}

WindowProof WindowProof::decode(ByteView bytes) {
  ByteReader r(bytes, "window proof");
  read_version(r, "window proof");
  WindowProof p;
  p.index = r.u64("index");
  const ByteView chunks = r.take(r.u32("chunk bytes"), "chunks");
  p.chunks.assign(chunks.begin(), chunks.end());
  const uint32_t k = r.u32("hash count");
  if (uint64_t{k} * 32 != r.remaining())
    fail(Status::kMalformed, "window proof: {} hashes need {} bytes, {} remain", k, uint64_t{k} * 32, r.remaining());
  p.hashes.resize(k);
  for (Digest &h : p.hashes) std::memcpy(h.bytes.data(), r.take(32, "hash").data(), 32);
  return p;
}

namespace {

// Reads a shard chunk by chunk, in order: next() gives chunk j's bytes.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  virtual ByteView next(uint64_t j, uint64_t len) = 0;
};

class MemorySource : public ChunkSource {
 public:
  explicit MemorySource(ByteView b) : b_(b) {}
  ByteView next(uint64_t j, uint64_t len) override { return b_.subspan(j * kStreamChunkSize, len); }

 private:
  ByteView b_;
};

class FileSource : public ChunkSource {
 public:
  FileSource(const std::string &path, uint64_t expect) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    if (!f_) fail(Status::kIo, "cannot open shard '{}': {}", path, std::strerror(errno));
    if (std::fseek(f_, 0, SEEK_END) != 0) fail(Status::kIo, "cannot read shard '{}'", path);
    const long size = std::ftell(f_);
    std::rewind(f_);
    if (size < 0 || static_cast<uint64_t>(size) != expect) {
      std::fclose(f_);
      f_ = nullptr;
      fail(Status::kInvalidArgument, "shard '{}': {} bytes, the dataset says {}", path, size, expect);
    }
    buf_.resize(kStreamChunkSize);
  }
  ~FileSource() override {
    if (f_) std::fclose(f_);
  }
  Bytes read_at(uint64_t offset, uint64_t len) {
    if (std::fseek(f_, static_cast<long>(offset), SEEK_SET) != 0) fail(Status::kIo, "cannot seek in shard '{}'", path_);
    Bytes b(len);
    if (std::fread(b.data(), 1, len, f_) != len) fail(Status::kIo, "cannot read shard '{}'", path_);
    return b;
  }
  ByteView next(uint64_t, uint64_t len) override {
    if (std::fread(buf_.data(), 1, len, f_) != len) fail(Status::kIo, "cannot read shard '{}'", path_);
    return ByteView(buf_.data(), len);
  }

 private:
  std::string path_;
  std::FILE *f_;
  Bytes buf_;
};

// One pass over the shard: the chunks left of the window fold into
// decompose(0, a) (what an accumulator started at 0 holds after them), the
// covered chunks are kept, the chunks right of it fold into decompose(c, m).
WindowProof prove(const StreamDataset &d, uint64_t index, ChunkSource &src) {
  const WindowCover cv = window_cover(d, index);
  WindowProof p;
  p.index = index;
  hash::Accumulator left(0), right(cv.c);
  for (uint64_t j = 0; j < cv.m; ++j) {
    const ByteView chunk = src.next(j, std::min<uint64_t>(kStreamChunkSize, cv.shard_bytes - j * kStreamChunkSize));
    if (j < cv.a)
      left.push_leaf(hash::leaf_hash(chunk));
    else if (j < cv.c)
      p.chunks.insert(p.chunks.end(), chunk.begin(), chunk.end());
    else
      right.push_leaf(hash::leaf_hash(chunk));
  }
  for (const hash::Subtree &t : left.subtrees()) p.hashes.push_back(t.hash);
  for (const hash::Subtree &t : right.subtrees()) p.hashes.push_back(t.hash);
  return p;
}

}  // namespace

WindowProof prove_window(const StreamDataset &d, uint64_t index, ByteView shard_bytes) {
  const WindowCover cv = window_cover(d, index);
  if (shard_bytes.size() != cv.shard_bytes)
    fail(Status::kInvalidArgument, "shard {}: {} bytes given, the dataset says {}", cv.shard, shard_bytes.size(),
         cv.shard_bytes);
  MemorySource src(shard_bytes);
  return prove(d, index, src);
}

WindowProof prove_window_file(const StreamDataset &d, uint64_t index, const std::string &shard_path) {
  const WindowCover cv = window_cover(d, index);
  FileSource src(shard_path, cv.shard_bytes);
  return prove(d, index, src);
}

Bytes read_window_file(const StreamDataset &d, uint64_t index, const std::string &shard_path) {
  const WindowCover cv = window_cover(d, index);
  FileSource src(shard_path, cv.shard_bytes);
  return src.read_at(cv.first_byte, uint64_t{d.window} * d.token_bytes());
}

std::pair<Digest, uint64_t> shard_root_file(const std::string &path, uint32_t token_bytes) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) fail(Status::kIo, "cannot open shard '{}': {}", path, std::strerror(errno));
  hash::Accumulator acc;
  Bytes buf(kStreamChunkSize);
  uint64_t total = 0;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f);
    if (n > 0) {
      acc.push_leaf(hash::leaf_hash(buf.data(), n));
      total += n;
    }
    if (n < buf.size()) break;
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fail(Status::kIo, "cannot read shard '{}'", path);
  if (total == 0) fail(Status::kInvalidArgument, "shard '{}' is empty (a shard holds at least one token)", path);
  if (total % token_bytes)
    fail(Status::kInvalidArgument, "shard '{}': {} bytes do not hold whole {}-byte tokens", path, total, token_bytes);
  return {acc.root(), total / token_bytes};
}

Bytes check_window(const StreamDataset &d, uint64_t index, const WindowProof &proof) {
  if (proof.index != index)
    fail(Status::kInvalidArgument, "the proof is of window {}, not {}", proof.index, index);
  const WindowCover cv = window_cover(d, index);
  if (proof.chunks.size() != cv.chunk_bytes())
    fail(Status::kProofLength, "window {}: {} chunk bytes, chunks [{}, {}) of shard {} hold {}", index,
         proof.chunks.size(), cv.a, cv.c, cv.shard, cv.chunk_bytes());
  const std::vector<hash::Subtree> left = hash::decompose(0, cv.a), right = hash::decompose(cv.c, cv.m);
  if (proof.hashes.size() != left.size() + right.size())
    fail(Status::kProofLength, "window {}: {} hashes, chunks [{}, {}) of {} need {}", index, proof.hashes.size(),
         cv.a, cv.c, cv.m, left.size() + right.size());
  hash::Accumulator acc;
  size_t h = 0;
  for (hash::Subtree t : left) {
    t.hash = proof.hashes[h++];
    acc.push(t);
  }
  const ByteView chunks(proof.chunks);
  for (size_t at = 0; at < chunks.size(); at += kStreamChunkSize)
    acc.push_leaf(hash::leaf_hash(chunks.subspan(at, std::min<size_t>(kStreamChunkSize, chunks.size() - at))));
  for (hash::Subtree t : right) {
    t.hash = proof.hashes[h++];
    acc.push(t);
  }
  if (acc.root() != d.shards[cv.shard].root)
    fail(Status::kProofMismatch, "window {}: the chunks give shard {} the root {}, the dataset commits to {}", index,
         cv.shard, acc.root().hex(), d.shards[cv.shard].root.hex());
  const uint64_t at = cv.first_byte - cv.a * kStreamChunkSize;
  const ByteView w = chunks.subspan(at, uint64_t{d.window} * d.token_bytes());
  return Bytes(w.begin(), w.end());
}

Bytes window_sample(const StreamDataset &d, ByteView window_tokens) {
  const uint32_t b = d.token_bytes();
  if (window_tokens.size() != uint64_t{d.window} * b)
    fail(Status::kInvalidArgument, "a window of {} tokens is {} bytes, not {}", d.window, uint64_t{d.window} * b,
         window_tokens.size());
  const size_t out_bytes = hash::dtype_size(d.output_dtype);
  std::vector<Bytes> data(d.views.size());
  std::vector<hash::StTensor> tensors;
  for (size_t i = 0; i < d.views.size(); ++i) {
    const StreamView &v = d.views[i];
    Bytes &out = data[i];
    out.reserve(size_t{v.length} * out_bytes);
    for (uint32_t j = 0; j < v.length; ++j) {
      const uint8_t *p = window_tokens.data() + size_t{v.start + j} * b;
      const uint64_t token = b == 2 ? uint64_t{p[0]} | uint64_t{p[1]} << 8 : get_u32le(p);
      if (out_bytes == 4) {
        if (token > 0x7fffffffu)
          fail(Status::kInvalidArgument, "view '{}': token {} does not fit I32", v.name, token);
        put_u32le(out, static_cast<uint32_t>(token));
      } else {
        put_u64le(out, token);
      }
    }
    tensors.push_back({hash::TensorMeta{v.name, d.output_dtype, {v.length}}, out});
  }
  return hash::safetensors_bytes(tensors, {});
}

}  // namespace pot::data
