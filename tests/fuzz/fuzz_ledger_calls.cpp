// A sequence of ledger calls, one JSON object per line, applied to a fresh
// ledger; a refused call must leave the state byte-identical, and every
// state an accepted call leaves must load back to the same bytes.
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "game/ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pot::game::LedgerConfig cfg;
  cfg.draw_delay = 1;       // the configuration of tests/vectors/ledger_transcript.json,
  cfg.opening_window = 10;  // whose calls are this target's seeds
  cfg.commit_window = 10;
  cfg.reveal_window = 10;
  cfg.max_committee_size = 3;
  cfg.min_stake = 1;
  cfg.max_rounds = 4;
  cfg.max_attempts = 2;
  cfg.dispute_window = 5;
  cfg.task_bond = 100;  // the transcript's bonds: its deposits cover them
  cfg.miner_bond = 1000;
  cfg.dispute_bond = 50;
  cfg.max_task_blocks = 100;
  cfg.max_open_tasks = 4;
  cfg.miner_grace = 2;
  // The transcript's referee: its op-phase calls (traces, node rounds,
  // openings, the referee's ruling) are seeds that apply.
  cfg.referee = {'r', 'e', 'f', 'e', 'r', 'e', 'e'};
  pot::game::Ledger ledger(cfg);
  const std::string text(reinterpret_cast<const char *>(data), size);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const nlohmann::json call = nlohmann::json::parse(text.begin() + pos, text.begin() + end, nullptr, false);
    pos = end + 1;
    if (call.is_discarded()) continue;
    const pot::Bytes before = ledger.save();
    try {
      (void)ledger.apply(call);
    } catch (const pot::Error &) {
      if (ledger.save() != before) std::abort();  // a refused call changed the state
      continue;
    }
    // Every state the calls reach is one load accepts, byte for byte (its
    // invariants: closed runs, the outcome log, re-runs' redraws).
    const pot::Bytes after = ledger.save();
    if (pot::game::Ledger::load(after).save() != after) std::abort();
  }
  return 0;
}
