#include "hash/rfc6962.h"

#include <bit>

#include "common/error.h"

namespace pot::hash {

Digest empty_root() { return sha256(nullptr, 0); }

Digest leaf_hash(const void *data, size_t len) {
  thread_local Sha256 h;
  return h.update_u8(0x00).update(data, len).finish();
}

Digest node_hash(const Digest &left, const Digest &right) {
  thread_local Sha256 h;
  return h.update_u8(0x01).update(left.view()).update(right.view()).finish();
}

uint64_t split_point(uint64_t n) {
  if (n < 2) fail(Status::kInternal, "split_point({}) is undefined", n);
  return std::bit_floor(n - 1);
}

std::vector<Subtree> decompose(uint64_t begin, uint64_t end) {
  std::vector<Subtree> out;
  while (begin < end) {
    unsigned level = std::bit_width(end - begin) - 1;
    if (begin != 0) level = std::min<unsigned>(level, std::countr_zero(begin));
    out.push_back(Subtree{begin, level, {}});
    begin += uint64_t{1} << level;
  }
  return out;
}

void Accumulator::push(const Subtree &s) {
  if (s.start != end_ || s.level > 63 || (s.start & ((uint64_t{1} << s.level) - 1)) != 0)
    fail(Status::kInvalidArgument,
         "subtree [{}, +2^{}) does not continue the range ending at {} on an aligned boundary",
         s.start, s.level, end_);
  if (s.end() < s.start) fail(Status::kOutOfRange, "leaf count overflows 64 bits");
  stack_.push_back(s);
  end_ = s.end();
  // Merge the two last entries while they are siblings (same level, the left
  // one aligned on the parent's boundary).
  while (stack_.size() >= 2) {
    Subtree &l = stack_[stack_.size() - 2];
    const Subtree &r = stack_.back();
    if (l.level != r.level || l.level >= 63 || (l.start & ((uint64_t{2} << l.level) - 1)) != 0)
      break;
    l.hash = node_hash(l.hash, r.hash);
    l.level += 1;
    stack_.pop_back();
  }
}

Digest fold_right(const std::vector<Subtree> &subtrees) {
  if (subtrees.empty()) return empty_root();
  Digest acc = subtrees.back().hash;
  for (size_t i = subtrees.size() - 1; i-- > 0;) acc = node_hash(subtrees[i].hash, acc);
  return acc;
}

Digest Accumulator::root() const { return fold_right(stack_); }

}  // namespace pot::hash
