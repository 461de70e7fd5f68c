#include "hash/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/tempfile.h"

namespace pot::hash {

namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 4;

// Parses JSON rejecting duplicate keys and nesting deeper than kMaxJsonDepth
// (the reference format never nests deeper than 3).
json parse_strict(std::string_view text) {
  std::vector<std::set<std::string>> keys;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json &parsed) {
    if (depth > kMaxJsonDepth)
      fail(Status::kMalformed, "safetensors header nests deeper than {} levels", kMaxJsonDepth);
    switch (ev) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second)
          fail(Status::kMalformed, "safetensors header repeats the key '{}'",
               parsed.get<std::string>());
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception &e) {
    fail(Status::kMalformed, "safetensors header is not valid JSON: {}", e.what());
  }
}

uint64_t get_uint(const json &v, const std::string &name, const char *field) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    fail(Status::kMalformed, "tensor '{}': {} holds a value that is not an unsigned integer", name,
         field);
  return v.get<uint64_t>();
}

StEntry parse_entry(const std::string &name, const json &v) {
  if (!v.is_object()) fail(Status::kMalformed, "tensor '{}': entry is not an object", name);
  for (const auto &[k, _] : v.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      fail(Status::kMalformed, "tensor '{}': unknown field '{}'", name, k);
  for (const char *k : {"dtype", "shape", "data_offsets"})
    if (!v.contains(k)) fail(Status::kMalformed, "tensor '{}': missing field '{}'", name, k);
  StEntry e;
  e.meta.name = name;
  const json &dt = v["dtype"];
  if (!dt.is_string()) fail(Status::kMalformed, "tensor '{}': dtype is not a string", name);
  auto dtype = dtype_from_name(dt.get<std::string>());
  if (!dtype)
    fail(Status::kUnsupported, "tensor '{}': dtype '{}' is not supported", name,
         dt.get<std::string>());
  e.meta.dtype = *dtype;
  const json &shape = v["shape"];
  if (!shape.is_array()) fail(Status::kMalformed, "tensor '{}': shape is not an array", name);
  if (shape.size() > kMaxDims)
    fail(Status::kLimit, "tensor '{}' has {} dimensions, the limit is {}", name, shape.size(),
         kMaxDims);
  for (const json &d : shape) e.meta.shape.push_back(get_uint(d, name, "shape"));
  const json &off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(Status::kMalformed, "tensor '{}': data_offsets is not an array of two integers", name);
  e.begin = get_uint(off[0], name, "data_offsets");
  e.end = get_uint(off[1], name, "data_offsets");
  return e;
}

}  // namespace

StHeader parse_header(std::string_view text, uint64_t data_len) {
  if (text.empty() || text.front() != '{')
    fail(Status::kMalformed, "safetensors header does not start with '{{'");
  const json root = parse_strict(text);
  if (!root.is_object()) fail(Status::kMalformed, "safetensors header is not a JSON object");
  if (root.size() > kMaxTensors + 1)
    fail(Status::kLimit, "safetensors header lists {} entries, the limit is {}", root.size(),
         kMaxTensors);
  StHeader h;
  for (const auto &[key, v] : root.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) fail(Status::kMalformed, "__metadata__ is not an object");
      for (const auto &[mk, mv] : v.items()) {
        if (!mv.is_string())
          fail(Status::kMalformed, "__metadata__ value of '{}' is not a string", mk);
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    try {
      validate_name(key);
    } catch (const Error &e) {
      // A name past the length bound is a limit (as everywhere); any other bad name is malformed.
      throw Error(e.status() == Status::kLimit ? Status::kLimit : Status::kMalformed, e.what());
    }
    h.entries.push_back(parse_entry(key, v));
  }
  // Byte lengths, then coverage of the data section (sorted by offsets).
  std::vector<const StEntry *> by_offset;
  for (const StEntry &e : h.entries) {
    const uint64_t want = validate_meta(e.meta);
    if (e.begin > e.end || e.end > data_len)
      fail(Status::kMalformed, "tensor '{}': data_offsets [{}, {}) outside the {}-byte data section",
           e.meta.name, e.begin, e.end, data_len);
    if (e.end - e.begin != want)
      fail(Status::kMalformed, "tensor '{}': {} bytes at data_offsets, dtype and shape imply {}",
           e.meta.name, e.end - e.begin, want);
    by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const StEntry *a, const StEntry *b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t covered = 0;
  for (const StEntry *e : by_offset) {
    if (e->begin != covered)
      fail(Status::kMalformed, "tensor '{}' starts at {}, {} (gap or overlap)", e->meta.name,
           e->begin, covered < e->begin ? fmt::format("bytes [{}, {}) belong to no tensor", covered, e->begin)
                                         : std::string("inside the previous tensor"));
    covered = e->end;
  }
  if (covered != data_len)
    fail(Status::kMalformed, "bytes [{}, {}) of the data section belong to no tensor", covered,
         data_len);
  // json objects iterate in std::map order, which is bytewise: entries are
  // already canonical.
  return h;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(Status::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(Status::kIo, "cannot stat '{}': {}", path, std::strerror(e));
  }
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  const auto size = static_cast<uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(Status::kIo, "'{}' is not a regular file", path);
  }
  if (size < 8) {
    ::close(fd);
    fail(Status::kMalformed, "'{}' is {} bytes, too short for a safetensors file", path, size);
  }
  void *m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (m == MAP_FAILED) fail(Status::kIo, "cannot map '{}': {}", path, std::strerror(map_errno));
  f->map_ = static_cast<const uint8_t *>(m);
  f->map_len_ = size;
  f->parse(f->map_, size, "'" + path + "'");
  return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::from_bytes(ByteView bytes) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  if (bytes.size() < 8)
    fail(Status::kMalformed, "safetensors bytes are {} long, too short for a safetensors file", bytes.size());
  f->owned_.assign(bytes.begin(), bytes.end());
  f->parse(f->owned_.data(), f->owned_.size(), "safetensors bytes");
  return f;
}

void SafetensorsFile::parse(const uint8_t *base, uint64_t size, const std::string &what) {
  const uint64_t n = get_u64le(base);
  if (n > kMaxHeaderBytes)
    fail(Status::kLimit, "{}: header of {} bytes exceeds the limit of {}", what, n, kMaxHeaderBytes);
  if (n > size - 8)
    fail(Status::kMalformed, "{}: header of {} bytes runs past the end of the {}-byte file", what, n, size);
  const std::string_view text(reinterpret_cast<const char *>(base + 8), n);
  header_ = parse_header(text, size - 8 - n);
  data_ = base + 8 + n;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(const_cast<uint8_t *>(map_), map_len_);
}

long SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(header_.entries.begin(), header_.entries.end(), name,
                             [](const StEntry &e, std::string_view n) { return e.meta.name < n; });
  if (it == header_.entries.end() || it->meta.name != name) return -1;
  return static_cast<long>(it - header_.entries.begin());
}

ByteView SafetensorsFile::data(size_t i) const {
  const StEntry &e = entry(i);
  return ByteView(data_ + e.begin, e.end - e.begin);
}

std::vector<StTensor> tensor_views(const SafetensorsFile &file) {
  std::vector<StTensor> v;
  v.reserve(file.size());
  for (size_t i = 0; i < file.size(); ++i) v.push_back({file.entry(i).meta, file.data(i)});
  return v;
}

std::map<std::string, Digest> SafetensorsFile::tensor_digests(unsigned threads) const {
  std::vector<ByteView> views;
  views.reserve(size());
  for (size_t i = 0; i < size(); ++i) views.push_back(data(i));
  const std::vector<Digest> roots = chunk_roots(views, threads);
  std::map<std::string, Digest> tensors;
  for (size_t i = 0; i < size(); ++i) {
    const StEntry &e = header_.entries[i];
    tensors.emplace(e.meta.name, tensor_digest(e.meta, e.end - e.begin, roots[i]));
  }
  return tensors;
}

Digest SafetensorsFile::digest(unsigned threads) const { return state_digest(tensor_digests(threads)); }

namespace {

// Validates the tensors and returns the padded header text of the canonical
// file and the tensors in name order (the order of the data).
std::pair<std::string, std::vector<const StTensor *>> canonical_header(
    const std::vector<StTensor> &tensors, const std::map<std::string, std::string> &metadata) {
  std::map<std::string, const StTensor *> sorted;
  for (const StTensor &t : tensors) {
    const uint64_t want = validate_meta(t.meta);
    if (t.data.size() != want)
      fail(Status::kInvalidArgument, "tensor '{}': {} bytes given, dtype and shape imply {}",
           t.meta.name, t.data.size(), want);
    if (!sorted.emplace(t.meta.name, &t).second)
      fail(Status::kDuplicate, "tensor '{}' is given twice", t.meta.name);
  }
  if (sorted.count("__metadata__"))
    fail(Status::kInvalidArgument, "'__metadata__' is reserved and cannot name a tensor");
  json header = json::object();
  if (!metadata.empty()) {
    json m = json::object();
    for (const auto &[k, v] : metadata) {
      if (!is_valid_utf8(k) || !is_valid_utf8(v))
        fail(Status::kInvalidArgument, "metadata entry '{}' is not valid UTF-8", k);
      m[k] = v;
    }
    header["__metadata__"] = m;
  }
  uint64_t offset = 0;
  std::vector<const StTensor *> order;
  for (const auto &[name, t] : sorted) {
    json shape = json::array();
    for (uint64_t d : t->meta.shape) shape.push_back(d);
    header[name] = {{"dtype", std::string(dtype_name(t->meta.dtype))},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + t->data.size()}}};
    offset += t->data.size();
    order.push_back(t);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes)
    fail(Status::kLimit, "header of {} bytes exceeds the limit of {}", text.size(),
         kMaxHeaderBytes);
  return {std::move(text), std::move(order)};
}

}  // namespace

Bytes safetensors_bytes(const std::vector<StTensor> &tensors, const std::map<std::string, std::string> &metadata) {
  const auto [text, sorted] = canonical_header(tensors, metadata);
  Bytes out;
  put_u64le(out, text.size());
  put_str(out, text);
  for (const StTensor *t : sorted) put_bytes(out, t->data);
  return out;
}

void write_safetensors(const std::string &path, const std::vector<StTensor> &tensors,
                       const std::map<std::string, std::string> &metadata) {
  const auto [text, sorted] = canonical_header(tensors, metadata);
  const std::string tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(Status::kIo, "cannot create '{}': {}", tmp, std::strerror(errno));
  auto write_all = [&](const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    while (n) {
      const ssize_t w = ::write(fd, b, std::min<size_t>(n, size_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        fail(Status::kIo, "cannot write '{}': {}", tmp, std::strerror(e));
      }
      b += w;
      n -= static_cast<size_t>(w);
    }
  };
  Bytes len;
  put_u64le(len, text.size());
  write_all(len.data(), len.size());
  write_all(text.data(), text.size());
  for (const StTensor *t : sorted) write_all(t->data.data(), t->data.size());
  const bool synced = ::fsync(fd) == 0;
  const int sync_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    const int e = synced ? errno : sync_errno;
    ::unlink(tmp.c_str());
    fail(Status::kIo, "cannot flush '{}': {}", tmp, std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(Status::kIo, "cannot rename '{}' to '{}': {}", tmp, path, std::strerror(e));
  }
}

}  // namespace pot::hash
