// The ledger's bonds (docs/ledger.md 2.18): deposits and withdrawals, and
// how a dispute's end moves its parties' bonds. The locks themselves are
// taken where the calls that bond are (post_task, start_training_commitment,
// open_dispute) and given back by prune_task; a FAIL burns the miner's bond
// in finalize_challenge.
#include <algorithm>

#include "common/error.h"
#include "game/ledger.h"
#include "game/ledger_util.h"

namespace pot::game {

using namespace ledger_util;

void Ledger::deposit(ByteView identity, uint64_t amount, uint64_t now) {
  constexpr const char *kCall = "deposit";
  check_now(now);
  check_caller(identity, kCall);
  book_.deposit(identity, amount, kCall);
  height_ = now;
}

void Ledger::withdraw(ByteView caller, uint64_t amount, uint64_t now) {
  constexpr const char *kCall = "withdraw";
  check_now(now);
  check_caller(caller, kCall);
  book_.withdraw(caller, amount, kCall);
  height_ = now;
}

bond::Balance Ledger::account_info(ByteView identity) const {
  check_caller(identity, "account_info");
  return book_.balance(identity);
}

void Ledger::settle_bonds(const DisputeRecord &d, bool miner_holds) noexcept {
  // A loser pays the winner's costs, at most dispute_bond; the rest of a
  // losing miner's bond burns. Paying the winner the whole bond would let a
  // miner about to FAIL launder it: a second identity of its own disputes,
  // the miner defaults, and the bond moves to itself before the FAIL burns it.
  const uint64_t costs = std::min(config_.dispute_bond, config_.miner_bond);
  switch (d.losers) {
    case kLoserMiner:  // the challenger is right: its bond back, its costs from the miner's
      book_.release(d.challenger, config_.dispute_bond);
      if (miner_holds) {
        book_.pay(d.miner, d.challenger, costs);
        if (config_.miner_bond > costs) book_.burn(d.miner, config_.miner_bond - costs);
      }
      break;
    case kLoserChallenger:  // a claim that did not hold pays the miner's costs
      book_.pay(d.challenger, d.miner, config_.dispute_bond);
      break;
    case kLoserMiner | kLoserChallenger:  // nobody is owed: both bonds burn
      book_.burn(d.challenger, config_.dispute_bond);
      if (miner_holds) book_.burn(d.miner, config_.miner_bond);
      break;
    default:  // no loser named (no referee, or it did not rule): nothing is owed
      book_.release(d.challenger, config_.dispute_bond);
      break;
  }
}

}  // namespace pot::game
