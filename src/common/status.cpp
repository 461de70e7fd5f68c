#include "common/status.h"

#include <cstdint>

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
  auto escape = [&out](unsigned char c) {
    constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  size_t i = 0;
  while (i < m.size()) {
    const auto c = static_cast<unsigned char>(m[i]);
    if (c < 0x80) {
      if (c >= 0x20 && c != 0x7f) out += static_cast<char>(c);
      else if (c == '\n' || c == '\t') out += static_cast<char>(c);
      else escape(c);
      ++i;
      continue;
    }
    // A well-formed sequence (RFC 3629: no overlongs, no surrogates, at most U+10FFFF) is kept.
    size_t n = 0;
    uint32_t cp = 0;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
    bool ok = n > 0 && i + n <= m.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const auto d = static_cast<unsigned char>(m[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (ok && n == 3) ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
    if (ok && n == 4) ok = cp >= 0x10000 && cp <= 0x10ffff;
    if (ok) {
      out.append(m.substr(i, n));
      i += n;
    } else {
      escape(c);
      ++i;
    }
  }
  return out;
}

}  // namespace pot
