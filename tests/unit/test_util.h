// Helpers shared by the C++ tests: vector files, hex, temporary directories.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pot::test {

// Parses tests/vectors/<name>.
nlohmann::json load_vectors(const std::string &name);
std::vector<uint8_t> unhex(const std::string &hex);
std::string hex(const uint8_t *p, size_t n);
// The whole file, as bytes (empty when it cannot be read).
std::vector<uint8_t> read_file(const std::string &path);

// A fresh directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::filesystem::path path() const { return path_; }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A ledger config (docs/ledger.md section 1) for tests of the C API.
inline constexpr const char *kLedgerConfigJson =
    R"({"draw_delay": 1, "opening_window": 10, "commit_window": 10, "reveal_window": 10, "max_committee_size": 3,
        "min_stake": 1, "max_rounds": 4, "max_attempts": 2,
        "dispute_window": 5, "dispute_arity": 2, "task_bond": 10, "miner_bond": 100, "dispute_bond": 10,
        "max_task_blocks": 1000000, "max_open_tasks": 8, "miner_grace": 2})";

// A witness statement of kind replayed (docs/PROTOCOL.md section 19), in
// an environment that can judge the test specs' steps bitwise.
inline std::string replayed_statement_json(const std::string &run_id_hex, uint64_t step, uint64_t challenge_id,
                                           const std::string &replayed_hex, int64_t bucket) {
  return nlohmann::json{{"run_id", run_id_hex},
                        {"step", step},
                        {"challenge_id", challenge_id},
                        {"mode", "bitwise"},
                        {"environment",
                         {{"framework_version", "1.13.0"},
                          {"intra_op_threads", 1},
                          {"hardware_class", "cpu-x86_64/aten:avx2/onednn:avx2"}}},
                        {"kind", "replayed"},
                        {"replayed_state", replayed_hex},
                        {"bucket", bucket},
                        {"gradient_digest", std::string(64, '0')}}
      .dump();
}

// Deterministic pseudo-random bytes (splitmix64) for test tensors.
std::vector<uint8_t> pseudo_random_bytes(size_t n, uint64_t seed);

}  // namespace pot::test
