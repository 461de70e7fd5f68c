// safetensors state files (https://github.com/huggingface/safetensors):
// u64le header length N, N bytes of JSON header, then the tensor bytes.
// The reader maps the file and validates the header before trusting any
// offset; the writer produces the canonical form (tensors in bytewise name
// order, contiguous, header padded with spaces to a multiple of 8).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hash/state.h"

namespace pot::hash {

inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // as the reference reader

struct StEntry {
  TensorMeta meta;
  uint64_t begin = 0;  // offsets into the data section
  uint64_t end = 0;
};

struct StHeader {
  std::vector<StEntry> entries;  // bytewise name order
  std::map<std::string, std::string> metadata;
};

// Parses and validates a header against a data section of data_len bytes:
// JSON object, no duplicate keys, known dtypes, shapes within bounds, offsets
// inside the data section, byte lengths matching dtype and shape, tensors
// covering the data section without gaps or overlaps. kMalformed/kLimit.
StHeader parse_header(std::string_view json, uint64_t data_len);

class SafetensorsFile {
 public:
  // Maps the file read-only. kIo when it cannot be opened or mapped.
  static std::unique_ptr<SafetensorsFile> open(const std::string &path);
  // Parses safetensors bytes held in memory (a sample payload); the bytes are
  // copied. Same validation as open().
  static std::unique_ptr<SafetensorsFile> from_bytes(ByteView bytes);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const StHeader &header() const { return header_; }
  size_t size() const { return header_.entries.size(); }
  const StEntry &entry(size_t i) const { return header_.entries.at(i); }
  // Index of the named tensor, or -1.
  long find(std::string_view name) const;
  ByteView data(size_t i) const;

  // The state digest of the file's tensors (metadata is not part of it),
  // hashing all tensors' chunks on `threads` threads straight from the map.
  Digest digest(unsigned threads) const;
  // Each tensor's digest, by name.
  std::map<std::string, Digest> tensor_digests(unsigned threads) const;

 private:
  SafetensorsFile() = default;
  // Validates the 8-byte prefix and the header of `len` bytes at `base`.
  void parse(const uint8_t *base, uint64_t len, const std::string &what);
  StHeader header_;
  Bytes owned_;  // from_bytes: the copy the views point into
  const uint8_t *map_ = nullptr;
  size_t map_len_ = 0;
  const uint8_t *data_ = nullptr;
};

struct StTensor {
  TensorMeta meta;
  ByteView data;
};

// The file's tensors in its (bytewise name) order, viewing its bytes: valid
// while the file lives.
std::vector<StTensor> tensor_views(const SafetensorsFile &file);

// The canonical safetensors bytes of the tensors, in memory (validated as
// write_safetensors does).
Bytes safetensors_bytes(const std::vector<StTensor> &tensors, const std::map<std::string, std::string> &metadata);

// Writes a canonical safetensors file: to a temporary file next to path,
// fsync, then rename, so a crash never leaves a half-written file at path.
// Validates every tensor (kInvalidArgument, kDuplicate) before writing.
void write_safetensors(const std::string &path, const std::vector<StTensor> &tensors,
                       const std::map<std::string, std::string> &metadata);

}  // namespace pot::hash
