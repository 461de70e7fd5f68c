#include "common/status.h"

#include "common/bytes.h"

namespace pot {

const char *status_name(Status s) noexcept {
  switch (s) {
    case Status::kOk: return "POT_OK";
    case Status::kInvalidArgument: return "POT_E_INVALID_ARGUMENT";
    case Status::kOutOfMemory: return "POT_E_OUT_OF_MEMORY";
    case Status::kIo: return "POT_E_IO";
    case Status::kMalformed: return "POT_E_MALFORMED";
    case Status::kLimit: return "POT_E_LIMIT";
    case Status::kOutOfRange: return "POT_E_OUT_OF_RANGE";
    case Status::kProofLength: return "POT_E_PROOF_LENGTH";
    case Status::kProofMismatch: return "POT_E_PROOF_MISMATCH";
    case Status::kDuplicate: return "POT_E_DUPLICATE";
    case Status::kState: return "POT_E_STATE";
    case Status::kUnsupported: return "POT_E_UNSUPPORTED";
    case Status::kBackend: return "POT_E_BACKEND";
    case Status::kInternal: return "POT_E_INTERNAL";
    case Status::kNotFound: return "POT_E_NOT_FOUND";
    case Status::kPermission: return "POT_E_PERMISSION";
    case Status::kConflict: return "POT_E_CONFLICT";
    case Status::kNonFinite: return "POT_E_NONFINITE";
  }
  return "POT_E_UNKNOWN";
}

std::string printable_message(std::string_view m) {
  std::string out;
  out.reserve(m.size());
  size_t i = 0;
  while (i < m.size()) {
    const auto c = static_cast<unsigned char>(m[i]);
    const size_t n = utf8_sequence_length(m, i);
    if (n > 1 || (n == 1 && ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t'))) {
      out.append(m.substr(i, n));  // printable ASCII, newline, tab, or a well-formed sequence
      i += n;
      continue;
    }
    out += "\\x" + to_hex(ByteView(&c, 1));
    ++i;
  }
  return out;
}

}  // namespace pot
