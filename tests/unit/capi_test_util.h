// Helpers for tests of the C API (pot.h only).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "pot.h"

namespace pot::test {

// The digest of a state's statistics table (docs/PROTOCOL.md 5.2), as a
// step leaf commits it; a zero digest when a call fails (the test's own
// assertions then fail on the leaf).
// The statistics table of a state file (empty on error).
inline std::vector<uint8_t> table_of(const pot_safetensors *file) {
  pot_bytes table{};
  std::vector<uint8_t> out;
  if (pot_safetensors_stats(&table, file, 1, nullptr) == POT_OK) out.assign(table.data, table.data + table.len);
  pot_bytes_free(&table);
  return out;
}

// Sets the run record (PROTOCOL.md 18, fields 16-18) of leaves and tables of
// S_1.. in order, with the steps pot_run_flags gives; returns pot_run_flags's JSON.
template <typename Leaves>
std::string set_run_record(pot_opening *o, const Leaves &leaves, const std::vector<std::vector<uint8_t>> &tables,
                           const std::vector<uint64_t> &flagged) {
  std::vector<uint8_t> all;
  for (const auto &l : leaves) all.insert(all.end(), l.begin(), l.end());
  std::vector<const uint8_t *> ptrs;
  std::vector<size_t> lens;
  for (const auto &t : tables) {
    ptrs.push_back(t.data());
    lens.push_back(t.size());
  }
  pot_bytes json{};
  std::string out;
  if (pot_run_flags(&json, ptrs.data(), lens.data(), tables.size(), nullptr) == POT_OK)
    out.assign(reinterpret_cast<const char *>(json.data), json.len);
  pot_bytes_free(&json);
  if (pot_opening_set_run_record(o, all.data(), all.size(), ptrs.data(), lens.data(), tables.size(), flagged.data(),
                                 flagged.size(), nullptr) != POT_OK)
    return "set_run_record failed";
  return out;
}

inline pot_digest stats_digest_of(const pot_safetensors *file) {
  pot_digest d{};
  pot_bytes table{};
  if (pot_safetensors_stats(&table, file, 1, nullptr) == POT_OK)
    (void)pot_state_stats_digest(&d, table.data, table.len, nullptr);
  pot_bytes_free(&table);
  return d;
}

}  // namespace pot::test
