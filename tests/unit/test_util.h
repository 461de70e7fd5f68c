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
    R"({"draw_delay": 1, "opening_window": 10, "commit_window": 10, "reveal_window": 10, "committee_size": 3,
        "min_stake": 1, "max_rounds": 4})";

// Deterministic pseudo-random bytes (splitmix64) for test tensors.
std::vector<uint8_t> pseudo_random_bytes(size_t n, uint64_t seed);

}  // namespace pot::test
