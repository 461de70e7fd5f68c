#include "common/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/error.h"

namespace pot {

Bytes read_all(const std::string &path, uint64_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(Status::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail(Status::kIo, "cannot read '{}'", path);
  if (static_cast<uint64_t>(size) > limit) fail(Status::kLimit, "'{}' is {} bytes, the limit is {}", path, size, limit);
  Bytes b(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char *>(b.data()), size)) fail(Status::kIo, "cannot read '{}'", path);
  return b;
}

}  // namespace pot
