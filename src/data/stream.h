// Token-stream datasets (docs/PROTOCOL.md 15.1, docs/design/token-streams.md):
// a dataset of flat token files (the train.bin of small language-model
// repositories), committed once over their bytes; sample i is the i-th
// window of W consecutive tokens, proven by the chunks that hold it. No
// file per sample, and the commitment costs one pass over the tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "hash/dtype.h"
#include "hash/sha256.h"

namespace pot::data {

using hash::Digest;

// Shard roots cut a shard's bytes into chunks of this many bytes (a window's
// proof carries the chunks that hold it: 2-3 for a 1,025-token uint16 window).
inline constexpr uint32_t kStreamChunkSize = 4096;
inline constexpr uint8_t kStreamVersion = 1;
inline constexpr uint32_t kMaxWindow = uint32_t{1} << 20;
inline constexpr uint32_t kMaxViews = 16;
inline constexpr uint32_t kMaxShards = uint32_t{1} << 20;
inline constexpr uint64_t kMaxShardTokens = uint64_t{1} << 40;
// A window's sample holds at most this many bytes of tensor data (the bound
// of a sample dataset's payload): a verifier rebuilding samples from window
// proofs allocates no more than a served sample could make it.
inline constexpr uint64_t kMaxStreamSampleBytes = uint64_t{64} << 20;
inline constexpr std::string_view kTagStream = "pot/v2/stream";

// One sample tensor cut from a window: tokens [start, start + length).
struct StreamView {
  std::string name;
  uint32_t start = 0;
  uint32_t length = 0;
  bool operator==(const StreamView &) const = default;
};

struct StreamShard {
  uint64_t tokens = 0;
  Digest root;  // shard_root: RFC 6962 root over its bytes in kStreamChunkSize chunks
  bool operator==(const StreamShard &) const = default;
};

struct StreamDataset {
  hash::DType token_dtype = hash::DType::kU16;   // U16 or U32, little-endian in the files
  hash::DType output_dtype = hash::DType::kI64;  // I32 or I64: the dtype of the sample tensors
  uint32_t window = 0;                           // W tokens per window, 2..kMaxWindow
  std::vector<StreamView> views;                 // 1..kMaxViews, names strictly increasing (bytewise)
  std::vector<StreamShard> shards;               // 1..kMaxShards, in order

  // Throws kInvalidArgument (kLimit for a bound) naming the first rule broken.
  void validate() const;
  // The canonical bytes (PROTOCOL.md 15.1); validates first.
  Bytes encode() const;
  // Strict: kMalformed for a truncated or trailing byte, an unknown version
  // (kUnsupported), then validate()'s rules.
  static StreamDataset decode(ByteView bytes);
  // dataset_root = tagged("pot/v2/stream", encode()).
  Digest root() const;
  // The number of windows (the dataset_size): each shard gives
  // max(0, tokens - W + 1). kInvalidArgument when it is 0.
  uint64_t size() const;
  // (shard, first token) of window `index`; kOutOfRange past size().
  std::pair<uint32_t, uint64_t> locate(uint64_t index) const;
  uint32_t token_bytes() const;  // 2 or 4
  // Bytes of tensor data in a window's sample: the views' lengths times the
  // output dtype's size (at most kMaxStreamSampleBytes).
  uint64_t sample_bytes() const;
  bool operator==(const StreamDataset &) const = default;
};

// Where window `index` lies (15.1): its shard, its first byte in the shard,
// and the chunks [a, c) of the shard's m that cover its bytes.
struct WindowCover {
  uint32_t shard = 0;
  uint64_t first_byte = 0;
  uint64_t shard_bytes = 0;
  uint64_t a = 0, c = 0, m = 0;
  uint64_t chunk_bytes() const { return std::min(c * kStreamChunkSize, shard_bytes) - a * kStreamChunkSize; }
};
// kOutOfRange past size().
WindowCover window_cover(const StreamDataset &d, uint64_t index);

// The shard root of a shard's bytes (which must hold whole tokens of
// token_bytes each; kInvalidArgument otherwise, or when empty).
Digest shard_root(ByteView bytes, uint32_t token_bytes);

// A window's proof (PROTOCOL.md 15.1): the chunks that hold its bytes and
// the subtree hashes left and right of them.
struct WindowProof {
  uint64_t index = 0;
  Bytes chunks;                 // the covered chunks' bytes, concatenated
  std::vector<Digest> hashes;   // decompose(0, a) then decompose(c, m), left to right

  Bytes encode() const;
  static WindowProof decode(ByteView bytes);
};

// Builds the proof of window `index` from its shard's bytes (the whole
// shard), in one pass and O(log) memory beside the proof. kInvalidArgument
// when the bytes are not the shard's size.
WindowProof prove_window(const StreamDataset &d, uint64_t index, ByteView shard_bytes);
// The same, reading the shard file (kIo when it cannot be read,
// kInvalidArgument when its size is not the shard's).
WindowProof prove_window_file(const StreamDataset &d, uint64_t index, const std::string &shard_path);

// The W tokens of window `index` read from its shard file (kIo when it
// cannot be read, kInvalidArgument when its size is not the shard's).
// Unchecked against the shard root: what a trainer reads; check_window or
// StreamFiles binds the bytes.
Bytes read_window_file(const StreamDataset &d, uint64_t index, const std::string &shard_path);

// The shard root and token count of a token file, read in one pass.
std::pair<Digest, uint64_t> shard_root_file(const std::string &path, uint32_t token_bytes);

// Checks a proof against the dataset and returns the window's token bytes
// (W tokens). kProofLength when its sizes are not the ones the dataset and
// index imply, kProofMismatch when the recomputed shard root differs.
Bytes check_window(const StreamDataset &d, uint64_t index, const WindowProof &proof);

// The sample of a window: its views as tensors of output_dtype, shape
// [length], as safetensors bytes (names in order, no metadata). The values
// are the tokens converted (an U32 token above 2^31 - 1 into I32 is
// kInvalidArgument).
Bytes window_sample(const StreamDataset &d, ByteView window_tokens);

}  // namespace pot::data
