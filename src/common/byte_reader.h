// A bounds-checked reader over a byte string, for the strict decoders of
// fixed-layout records: every shortfall is kMalformed, naming the record
// (`context`), the field and the offset.
#pragma once

#include <string_view>

#include "common/bytes.h"
#include "common/error.h"

namespace pot {

class ByteReader {
 public:
  ByteReader(ByteView b, std::string_view context) : b_(b), context_(context) {}
  ByteView take(size_t n, const char *what) {
    if (n > b_.size() - at_)
      fail(Status::kMalformed, "{}: {} needs {} bytes at offset {}, {} remain", context_, what, n, at_,
           b_.size() - at_);
    ByteView v = b_.subspan(at_, n);
    at_ += n;
    return v;
  }
  uint8_t u8(const char *what) { return take(1, what)[0]; }
  uint32_t u32(const char *what) { return get_u32le(take(4, what).data()); }
  uint64_t u64(const char *what) { return get_u64le(take(8, what).data()); }
  size_t remaining() const { return b_.size() - at_; }

 private:
  ByteView b_;
  std::string_view context_;
  size_t at_ = 0;
};

}  // namespace pot
