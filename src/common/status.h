// Status codes shared by every layer. The numeric values are the ones
// frozen in include/pot.h (pot_status); keep the two lists identical.
#pragma once

#include <string>
#include <string_view>

namespace pot {

enum class Status : int {  // fixed type: any int value is valid
  kOk = 0,
  kInvalidArgument = 1,
  kOutOfMemory = 2,
  kIo = 3,
  kMalformed = 4,
  kLimit = 5,
  kOutOfRange = 6,
  kProofLength = 7,
  kProofMismatch = 8,
  kDuplicate = 9,
  kState = 10,
  kUnsupported = 11,
  kBackend = 12,
  kInternal = 13,
  kNotFound = 14,
  kPermission = 15,
  kConflict = 16,
  kNonFinite = 17,
};
// The number of statuses (kOk included): the one past the last. A status
// appended to both lists raises it.
inline constexpr int kStatusCount = static_cast<int>(Status::kNonFinite) + 1;

// Stable upper-case name of a status, e.g. "POT_E_MALFORMED".
const char *status_name(Status s) noexcept;

// An error message as the C API hands it out: valid UTF-8 with no control
// character but newline and tab. Anything else (bytes of a hostile input a
// lower layer quoted, say) is written as \xNN.
std::string printable_message(std::string_view message);

}  // namespace pot
