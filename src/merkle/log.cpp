#include "merkle/log.h"

#include <bit>

#include "common/error.h"

namespace pot::merkle {

void Log::append_hash(const Digest &leaf_hash) {
  if (acc_.end() == UINT64_MAX) fail(Status::kOutOfRange, "the log is full (2^64 - 1 leaves)");
  acc_.push_leaf(leaf_hash);
}

Bytes Log::save() const {
  Bytes out;
  put_u64le(out, size());
  for (const hash::Subtree &s : acc_.subtrees()) put_bytes(out, s.hash.view());
  return out;
}

Log Log::load(ByteView b) {
  if (b.size() < 8) fail(Status::kMalformed, "log state is {} bytes, shorter than 8", b.size());
  const uint64_t size = get_u64le(b.data());
  const size_t want = 8 + size_t{32} * std::popcount(size);
  if (b.size() != want)
    fail(Status::kMalformed, "log state of size {} must be {} bytes, got {}", size, want,
         b.size());
  Log log;
  size_t i = 0;
  for (hash::Subtree s : hash::decompose(0, size)) {
    s.hash = Digest::from_bytes(b.subspan(8 + 32 * i++, 32));
    log.acc_.push(s);
  }
  return log;
}

}  // namespace pot::merkle
