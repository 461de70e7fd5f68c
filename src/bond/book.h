// What a ledger holds of each identity (docs/ledger.md section 2.18): a free
// balance, deposited by the runtime and withdrawn by its owner, and a locked
// part, the bonds its tasks, runs and disputes hold. A bond is locked from
// the free balance, and leaves the lock one of three ways: given back to
// its owner, paid to another identity's free balance, or burned. Nothing
// else creates or destroys value: held() + burned() always equals what was
// deposited less what was withdrawn, and held() stays below 2^64, so no
// balance or sum can overflow.
//
// The book does not say which bond is which: the ledger's records do (a
// task's owner holds the task bond, a run's miner its run bond, a dispute's
// challenger its dispute bond), so nothing is stored twice and the saved
// state lists only free balances (the locks are rebuilt from the records).
//
// Refused calls throw pot::Error and change nothing. Calls that may
// allocate say so; the others do not throw once their preconditions hold,
// so a caller with a strong guarantee to keep checks first, allocates
// next, then moves.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>

#include "common/bytes.h"

namespace pot::bond {

// Orders identities bytewise, and finds a ByteView without copying it into
// a key (lookups in the noexcept moves below must not allocate).
struct IdentityLess {
  using is_transparent = void;
  bool operator()(ByteView a, ByteView b) const noexcept {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

struct Balance {
  uint64_t free = 0;
  uint64_t locked = 0;
  bool operator==(const Balance &) const = default;
};

class Book {
 public:
  // An identity the book has never seen has a zero balance.
  Balance balance(ByteView identity) const;
  // Every free balance and lock, summed (below 2^64).
  uint64_t held() const { return held_; }
  // What left the book by burn().
  uint64_t burned() const { return burned_; }
  // The identities with a balance, sorted, and theirs.
  const std::map<Bytes, Balance, IdentityLess> &accounts() const { return accounts_; }

  // kInvalidArgument for an amount of 0; kOutOfRange when held() would
  // pass 2^64 - 1. May allocate.
  void deposit(ByteView identity, uint64_t amount, const char *call);
  // kInvalidArgument for an amount of 0; kState when the free balance is
  // below `amount` (naming what is locked).
  void withdraw(ByteView identity, uint64_t amount, const char *call);
  // kState naming `what` when the free balance is below `amount`.
  void check_free(ByteView identity, uint64_t amount, const char *call, const char *what) const;
  // Moves `amount` from the free balance to the lock (check_free first).
  void lock(ByteView identity, uint64_t amount) noexcept;
  // Moves `amount` of the lock back to the free balance (it is locked).
  void release(ByteView identity, uint64_t amount) noexcept;
  // Makes sure `identity` has an entry, so that pay() to it cannot
  // allocate. May allocate; an empty entry is invisible (balance 0) and
  // dropped by the next call that empties an entry of that identity.
  void reserve(ByteView identity);
  // Moves `amount` of `from`'s lock to `to`'s free balance (reserve(to)
  // first).
  void pay(ByteView from, ByteView to, uint64_t amount) noexcept;
  // Moves `amount` of `from`'s lock out of the book.
  void burn(ByteView from, uint64_t amount) noexcept;

  // Loading a saved state: a free balance (>= 1, identities in increasing
  // order), then the locks the records hold, then what was burned.
  // kInvalidArgument describing the fault (held() past 2^64 - 1, an
  // identity out of order, a zero balance).
  void restore_free(ByteView identity, uint64_t free);
  void restore_lock(ByteView identity, uint64_t amount);
  void restore_burned(uint64_t burned) { burned_ = burned; }

 private:
  Balance &entry(ByteView identity) noexcept;  // the identity has an entry
  void tidy(ByteView identity) noexcept;       // drops its entry once empty (erasing does not allocate)
  // kOutOfRange, naming `call`, when held() + amount would pass 2^64 - 1.
  void add_held(uint64_t amount, const char *call) const;

  std::map<Bytes, Balance, IdentityLess> accounts_;
  uint64_t held_ = 0;
  uint64_t burned_ = 0;
};

}  // namespace pot::bond
