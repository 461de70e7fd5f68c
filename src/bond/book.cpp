#include "bond/book.h"

#include <algorithm>

#include "common/error.h"

namespace pot::bond {

Balance Book::balance(ByteView identity) const {
  const auto it = accounts_.find(identity);
  return it == accounts_.end() ? Balance{} : it->second;
}

Balance &Book::entry(ByteView identity) noexcept {
  return accounts_.find(identity)->second;
}

void Book::tidy(ByteView identity) noexcept {
  const auto it = accounts_.find(identity);
  if (it != accounts_.end() && it->second == Balance{}) accounts_.erase(it);
}

void Book::add_held(uint64_t amount, const char *call) const {
  if (amount > UINT64_MAX - held_)
    fail(Status::kOutOfRange, "{}: the ledger would hold more than 2^64 - 1 ({} held, {} more)", call, held_, amount);
}

void Book::deposit(ByteView identity, uint64_t amount, const char *call) {
  if (amount == 0) fail(Status::kInvalidArgument, "{}: an amount of 0", call);
  add_held(amount, call);
  reserve(identity);
  entry(identity).free += amount;  // below 2^64: held_ bounds it
  held_ += amount;
}

void Book::check_free(ByteView identity, uint64_t amount, const char *call, const char *what) const {
  const Balance b = balance(identity);
  if (b.free < amount)
    fail(Status::kState, "{}: {} needs a free balance of {}; {} has {} free ({} locked in bonds)", call, what,
         amount, to_hex(identity), b.free, b.locked);
}

void Book::withdraw(ByteView identity, uint64_t amount, const char *call) {
  if (amount == 0) fail(Status::kInvalidArgument, "{}: an amount of 0", call);
  check_free(identity, amount, call, "the withdrawal");
  entry(identity).free -= amount;
  held_ -= amount;
  tidy(identity);
}

void Book::lock(ByteView identity, uint64_t amount) noexcept {
  Balance &b = entry(identity);
  b.free -= amount;
  b.locked += amount;
}

void Book::release(ByteView identity, uint64_t amount) noexcept {
  Balance &b = entry(identity);
  b.locked -= amount;
  b.free += amount;
}

void Book::reserve(ByteView identity) {
  if (!accounts_.contains(identity)) accounts_.emplace(Bytes(identity.begin(), identity.end()), Balance{});
}

void Book::pay(ByteView from, ByteView to, uint64_t amount) noexcept {
  entry(from).locked -= amount;
  entry(to).free += amount;
  tidy(from);
}

void Book::burn(ByteView from, uint64_t amount) noexcept {
  entry(from).locked -= amount;
  held_ -= amount;
  burned_ += amount;
  tidy(from);
}

void Book::restore_free(ByteView identity, uint64_t free) {
  if (free == 0) fail(Status::kInvalidArgument, "account {}: a free balance of 0 (such accounts are not listed)",
                      to_hex(identity));
  Bytes id(identity.begin(), identity.end());
  if (!accounts_.empty() && accounts_.rbegin()->first >= id)
    fail(Status::kInvalidArgument, "account {}: accounts are not in increasing identity order", to_hex(identity));
  add_held(free, "account");
  accounts_.emplace(std::move(id), Balance{free, 0});
  held_ += free;
}

void Book::restore_lock(ByteView identity, uint64_t amount) {
  add_held(amount, "bond");
  reserve(identity);
  entry(identity).locked += amount;
  held_ += amount;
}

}  // namespace pot::bond
