#include "merkle/stored_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace pot::merkle {

using hash::kDigestSize;
using hash::Subtree;

namespace {
constexpr char kMagic[8] = {'P', 'O', 'T', 'M', 'T', 'R', 'E', 'E'};
constexpr uint32_t kFileVersion = 1;
constexpr uint64_t kHeaderSize = 16;
constexpr size_t kWriteBuffer = size_t{1} << 20;
}  // namespace

uint64_t postorder_position(unsigned level, uint64_t index) {
  const uint64_t m = (index + 1) << level;  // leaves when the node completes
  return postorder_count(m) - 1 - (std::countr_zero(m) - level);
}

// Where node hashes live: a vector, or a file with a write buffer.
class NodeStore {
 public:
  virtual ~NodeStore() = default;
  virtual uint64_t count() const = 0;  // nodes stored
  virtual void append(const Digest &d) = 0;
  virtual Digest read(uint64_t pos) const = 0;
  virtual void flush() {}
};

namespace {

class MemoryStore final : public NodeStore {
 public:
  uint64_t count() const override { return nodes_.size(); }
  void append(const Digest &d) override { nodes_.push_back(d); }
  Digest read(uint64_t pos) const override { return nodes_.at(pos); }

 private:
  std::vector<Digest> nodes_;
};

class FileStore final : public NodeStore {
 public:
  FileStore(const std::string &path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(Status::kIo, "cannot open '{}': {}", path, std::strerror(errno));
    struct stat st {};
    if (fstat(fd_, &st) != 0) io_fail("stat");
    if (st.st_size == 0) {
      uint8_t header[kHeaderSize] = {};
      std::memcpy(header, kMagic, 8);
      header[8] = kFileVersion;
      header[12] = kDigestSize;
      write_at(header, sizeof header, 0);
      if (::fsync(fd_) != 0) io_fail("sync");
      flushed_ = 0;
      return;
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    uint8_t header[kHeaderSize];
    if (size < kHeaderSize || ::pread(fd_, header, kHeaderSize, 0) != kHeaderSize ||
        std::memcmp(header, kMagic, 8) != 0)
      bad("is not a pot tree file (bad magic)");
    if (get_u32le(header + 8) != kFileVersion || get_u32le(header + 12) != kDigestSize)
      bad(fmt::format("has version {} and hash size {}, expected {} and {}", get_u32le(header + 8),
                      get_u32le(header + 12), kFileVersion, kDigestSize));
    if ((size - kHeaderSize) % kDigestSize != 0)
      bad("ends inside a hash (torn write)");
    flushed_ = (size - kHeaderSize) / kDigestSize;
  }
  ~FileStore() override {
    try {
      flush();
    } catch (...) {
      // Destructors cannot report; StoredTree::flush() is the checked path.
    }
    ::close(fd_);
  }

  uint64_t count() const override { return flushed_ + buffer_.size() / kDigestSize; }
  void append(const Digest &d) override {
    put_bytes(buffer_, d.view());
    if (buffer_.size() >= kWriteBuffer) flush();
  }
  Digest read(uint64_t pos) const override {
    if (pos >= flushed_) return Digest::from_bytes(ByteView(buffer_).subspan((pos - flushed_) * 32, 32));
    Digest d;
    const ssize_t r = ::pread(fd_, d.bytes.data(), kDigestSize, kHeaderSize + pos * kDigestSize);
    if (r != static_cast<ssize_t>(kDigestSize)) io_fail("read");
    return d;
  }
  void flush() override {
    if (buffer_.empty()) return;
    write_at(buffer_.data(), buffer_.size(), kHeaderSize + flushed_ * kDigestSize);
    flushed_ += buffer_.size() / kDigestSize;
    buffer_.clear();
  }

 private:
  [[noreturn]] void io_fail(const char *what) const {
    fail(Status::kIo, "cannot {} '{}': {}", what, path_, std::strerror(errno));
  }
  [[noreturn]] void bad(const std::string &why) const {
    fail(Status::kMalformed, "'{}' {}", path_, why);
  }
  void write_at(const uint8_t *p, size_t n, uint64_t off) {
    while (n) {
      const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) io_fail("write");
      p += w;
      n -= static_cast<size_t>(w);
      off += static_cast<uint64_t>(w);
    }
  }

  std::string path_;
  int fd_ = -1;
  uint64_t flushed_ = 0;
  Bytes buffer_;
};

}  // namespace

namespace {

// The hashes a tree file holds past its header (kMalformed when it has no
// valid header); a torn last hash counts as absent.
uint64_t tree_file_hashes(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(Status::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  uint8_t header[kHeaderSize];
  const bool ok = fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= kHeaderSize &&
                  ::pread(fd, header, kHeaderSize, 0) == static_cast<ssize_t>(kHeaderSize);
  ::close(fd);
  if (!ok || std::memcmp(header, kMagic, 8) != 0 || get_u32le(header + 8) != kFileVersion ||
      get_u32le(header + 12) != kDigestSize)
    fail(Status::kMalformed, "'{}' is not a pot tree file of version {}", path, kFileVersion);
  return (static_cast<uint64_t>(st.st_size) - kHeaderSize) / kDigestSize;
}

}  // namespace

uint64_t tree_file_leaves(const std::string &path) {
  const uint64_t hashes = tree_file_hashes(path);
  uint64_t lo = 0, hi = hashes;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (postorder_count(mid) <= hashes) lo = mid; else hi = mid - 1;
  }
  return lo;
}

void truncate_tree_file(const std::string &path, uint64_t size) {
  const uint64_t hashes = tree_file_hashes(path);
  if (size > UINT64_MAX / 4 || postorder_count(size) > hashes)
    fail(Status::kMalformed, "'{}' holds {} hashes, fewer than a tree of {} leaves", path, hashes, size);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(Status::kIo, "cannot open '{}': {}", path, std::strerror(errno));
  const bool ok = ::ftruncate(fd, static_cast<off_t>(kHeaderSize + postorder_count(size) * kDigestSize)) == 0 &&
                  ::fsync(fd) == 0;
  const int e = errno;
  ::close(fd);
  if (!ok) fail(Status::kIo, "cannot truncate '{}': {}", path, std::strerror(e));
}

StoredTree::StoredTree(std::unique_ptr<NodeStore> store) : store_(std::move(store)) {
  // The node count is 2n - popcount(n), strictly increasing in n: find n.
  const uint64_t count = store_->count();
  uint64_t lo = 0, hi = count;  // 2n - popcount(n) >= n, so n <= count
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (postorder_count(mid) <= count) lo = mid; else hi = mid - 1;
  }
  if (postorder_count(lo) != count)
    fail(Status::kMalformed,
         "tree file holds {} hashes, which no tree size gives (an append was interrupted)", count);
  size_ = lo;
  for (Subtree s : hash::decompose(0, size_)) {
    s.hash = node(s.level, s.start >> s.level);
    border_.push_back(s);
  }
}

StoredTree::~StoredTree() = default;

std::unique_ptr<StoredTree> StoredTree::in_memory() {
  return std::unique_ptr<StoredTree>(new StoredTree(std::make_unique<MemoryStore>()));
}

std::unique_ptr<StoredTree> StoredTree::open(const std::string &path) {
  return std::unique_ptr<StoredTree>(new StoredTree(std::make_unique<FileStore>(path)));
}

uint64_t StoredTree::append_hash(const Digest &leaf_hash) {
  if (size_ == UINT64_MAX / 2) fail(Status::kOutOfRange, "the tree is full");
  const uint64_t index = size_;
  store_->append(leaf_hash);
  Subtree cur{index, 0, leaf_hash};
  while (!border_.empty() && border_.back().level == cur.level) {
    cur = Subtree{border_.back().start, cur.level + 1, hash::node_hash(border_.back().hash, cur.hash)};
    border_.pop_back();
    store_->append(cur.hash);
  }
  border_.push_back(cur);
  ++size_;
  return index;
}

void StoredTree::flush() { store_->flush(); }

Digest StoredTree::node(unsigned level, uint64_t index) const {
  return store_->read(postorder_position(level, index));
}

Digest StoredTree::subtree(uint64_t lo, uint64_t hi) const {
  std::vector<Subtree> parts = hash::decompose(lo, hi);
  for (Subtree &s : parts) s.hash = node(s.level, s.start >> s.level);
  return hash::fold_right(parts);
}

Digest StoredTree::root(uint64_t size) const {
  if (size > size_) fail(Status::kOutOfRange, "size {} is larger than the tree ({})", size, size_);
  if (size == size_) return hash::fold_right(border_);
  return subtree(0, size);
}

Digest StoredTree::leaf_hash(uint64_t index) const {
  if (index >= size_) fail(Status::kOutOfRange, "leaf {} is not below the tree size {}", index, size_);
  return node(0, index);
}

std::vector<Digest> StoredTree::inclusion_proof(uint64_t index, uint64_t size) const {
  if (size > size_) fail(Status::kOutOfRange, "size {} is larger than the tree ({})", size, size_);
  if (index >= size)
    fail(Status::kOutOfRange, "leaf index {} is not below the tree size {}", index, size);
  std::vector<Digest> proof;
  uint64_t lo = 0, hi = size;
  while (hi - lo > 1) {
    const uint64_t k = hash::split_point(hi - lo);
    if (index < lo + k) {
      proof.push_back(subtree(lo + k, hi));
      hi = lo + k;
    } else {
      proof.push_back(subtree(lo, lo + k));
      lo += k;
    }
  }
  std::reverse(proof.begin(), proof.end());
  return proof;
}

std::vector<Digest> StoredTree::consistency_proof(uint64_t size1, uint64_t size2) const {
  if (size2 > size_) fail(Status::kOutOfRange, "size {} is larger than the tree ({})", size2, size_);
  if (size1 == 0) fail(Status::kOutOfRange, "a consistency proof needs size1 > 0");
  if (size1 > size2) fail(Status::kOutOfRange, "size1 {} is larger than size2 {}", size1, size2);
  std::vector<Digest> proof;
  uint64_t m = size1, lo = 0, hi = size2;
  bool whole = true;
  while (m != hi - lo) {
    const uint64_t k = hash::split_point(hi - lo);
    if (m <= k) {
      proof.push_back(subtree(lo + k, hi));
      hi = lo + k;
    } else {
      proof.push_back(subtree(lo, lo + k));
      m -= k;
      lo += k;
      whole = false;
    }
  }
  if (!whole) proof.push_back(subtree(lo, hi));
  std::reverse(proof.begin(), proof.end());
  return proof;
}

}  // namespace pot::merkle
