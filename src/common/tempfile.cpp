#include "common/tempfile.h"

#include <unistd.h>

#include <atomic>

namespace pot {

std::string temp_path_for(const std::string &path) {
  static std::atomic<unsigned long long> counter{0};
  return path + ".tmp-pot." + std::to_string(static_cast<long long>(::getpid())) + "." +
         std::to_string(counter.fetch_add(1));
}

}  // namespace pot
