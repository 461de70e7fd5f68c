// pot::Error: the one exception type the core throws. It carries a Status
// that the C API firewall (src/capi) turns into a pot_status.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "common/status.h"

namespace pot {

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

// Throws pot::Error with a message built by fmt.
template <typename... Args>
[[noreturn]] void fail(Status status, fmt::format_string<Args...> f,
                       Args &&...args) {
  throw Error(status, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace pot
