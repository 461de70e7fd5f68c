#include "test_util.h"

#include <unistd.h>

#include <fstream>
#include <random>
#include <stdexcept>

namespace pot::test {

std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

nlohmann::json load_vectors(const std::string &name) {
  std::ifstream in(std::string(POT_VECTORS_DIR) + "/" + name);
  if (!in) throw std::runtime_error("cannot open vectors file " + name);
  return nlohmann::json::parse(in);
}

std::vector<uint8_t> unhex(const std::string &h) {
  if (h.size() % 2) throw std::runtime_error("odd hex: " + h);
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(std::stoul(h.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::string hex(const uint8_t *p, size_t n) {
  static const char d[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pot-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> pseudo_random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed;
  for (size_t i = 0; i < n; i += 8) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (size_t k = 0; k < 8 && i + k < n; ++k) out[i + k] = static_cast<uint8_t>(z >> (8 * k));
  }
  return out;
}

}  // namespace pot::test
