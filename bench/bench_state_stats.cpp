// bench_state_stats - the cost of a state's statistics table (pot_safetensors_stats,
// docs/PROTOCOL.md 5.2) against its state digest (pot_safetensors_digest),
// over the same mapped safetensors file with a warm page cache.
//
// The state: an F32 embedding and head, two F32 Adam moments and a BF16 copy
// of the head (about --mib MiB in all), plus 64 small F32 tensors, filled with
// values spread like trained weights (a few binades around 0.02; moments
// around 1e-3 and 1e-7), so that the statistics take the path real states
// take (no NaN, no subnormal). Each repetition times the digest and the
// statistics on 1 thread and on every core, interleaved; the report gives
// the medians, the statistics' share of the digest's time (target of round
// 3: <= 1%, docs/security.md 6.3) and checks that the table does not depend
// on the thread count (exit status 3 otherwise).
//
// Then the path of a trainer's state in memory (the recorder's end_step):
// pot_state_add_tensor, which digests each tensor and computes its row in
// one read (each 64 KiB chunk's share of the statistics right after the
// chunk is hashed, from the cache), against pot_tensor_digest of the same
// tensors alone; the report gives the row's extra share of the digest.
//
// Usage: bench_state_stats [--mib N] [--reps N] [--tmpdir DIR] [--keep FILE]
// --keep writes the state to FILE and leaves it there (to time `pot hash
// stats` against `pot hash state` as whole commands).
// Only the public C API (pot.h) is used.

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "pot.h"

namespace {

using bench::Clock;

std::vector<uint8_t> weights(size_t n, double scale, uint64_t seed, bool bf16) {
  bench::SplitMix64 rng(seed);
  std::vector<uint8_t> out(n * (bf16 ? 2 : 4));
  for (size_t i = 0; i < n; ++i) {
    // A sum of four uniforms: roughly normal, never zero.
    double v = -2.0;
    for (int k = 0; k < 4; ++k) v += static_cast<double>(rng.next() >> 11) / 9007199254740992.0;
    const float f = static_cast<float>(v * scale + scale * 1e-3);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (bf16) {
      const uint16_t h = static_cast<uint16_t>(bits >> 16);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(out.data() + 4 * i, &bits, 4);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"bench_state_stats: statistics table against state digest"};
  size_t mib = 512;
  int reps = 5;
  std::string tmpdir = "/tmp";
  app.add_option("--mib", mib, "approximate state size in MiB")->capture_default_str();
  app.add_option("--reps", reps, "repetitions")->capture_default_str();
  app.add_option("--tmpdir", tmpdir, "where the state file is written")->capture_default_str();
  std::string keep;
  app.add_option("--keep", keep, "write the state to this file and keep it");
  CLI11_PARSE(app, argc, argv);

  const size_t big = mib * (size_t{1} << 20) / 4 / 4;  // elements of each large F32 tensor
  struct T {
    std::string name;
    pot_dtype dtype;
    std::vector<uint8_t> bytes;
  };
  std::vector<T> ts;
  ts.push_back({"optim/head/exp_avg", POT_DTYPE_F32, weights(big, 1e-3, 1, false)});
  ts.push_back({"optim/head/exp_avg_sq", POT_DTYPE_F32, weights(big, 1e-7, 2, false)});
  ts.push_back({"param/embed", POT_DTYPE_F32, weights(big * 3 / 4, 0.02, 3, false)});
  ts.push_back({"param/head", POT_DTYPE_F32, weights(big * 3 / 4, 0.02, 4, false)});
  ts.push_back({"param/head_bf16", POT_DTYPE_BF16, weights(big, 0.02, 5, true)});
  for (int i = 0; i < 64; ++i)
    ts.push_back({"param/norm" + std::to_string(100 + i), POT_DTYPE_F32, weights(768 + i, 1.0, 10 + i, false)});
  pot_safetensors_writer *w = nullptr;
  POT_CHECK(pot_safetensors_writer_new, &w);
  size_t total = 0;
  for (const T &t : ts) {
    const uint64_t shape[1] = {t.bytes.size() / (t.dtype == POT_DTYPE_BF16 ? 2 : 4)};
    POT_CHECK(pot_safetensors_writer_add, w, t.name.c_str(), t.dtype, shape, 1, t.bytes.data(), t.bytes.size());
    total += t.bytes.size();
  }
  const std::string path =
      keep.empty() ? tmpdir + "/bench_state_stats." + std::to_string(getpid()) + ".safetensors" : keep;
  POT_CHECK(pot_safetensors_writer_write, w, path.c_str());
  pot_safetensors_writer_free(w);
  ts.clear();
  pot_safetensors *f = nullptr;
  POT_CHECK(pot_safetensors_open, &f, path.c_str());

  std::printf("state: %zu tensors, %.1f MiB (%s)\ncpu: %s\n", pot_safetensors_count(f), total / 1048576.0,
              path.c_str(), bench::cpu_model().c_str());
  pot_bytes reference{};
  POT_CHECK(pot_safetensors_stats, &reference, f, 1);  // also warms the page cache
  int status = 0;
  for (uint32_t threads : {1u, 0u}) {
    std::vector<double> digest_s, stats_s;
    for (int r = 0; r < reps; ++r) {
      pot_digest d;
      auto t0 = Clock::now();
      POT_CHECK(pot_safetensors_digest, &d, f, threads);
      digest_s.push_back(bench::seconds_since(t0));
      pot_bytes table{};
      t0 = Clock::now();
      POT_CHECK(pot_safetensors_stats, &table, f, threads);
      stats_s.push_back(bench::seconds_since(t0));
      if (table.len != reference.len || std::memcmp(table.data, reference.data, table.len) != 0) status = 3;
      pot_bytes_free(&table);
    }
    const auto ds = bench::summarize(digest_s), ss = bench::summarize(stats_s);
    std::printf("threads %s: digest median %.3f s (%.2f GB/s), statistics median %.3f s (%.2f GB/s): "
                "statistics = %.1f%% of the digest\n",
                threads ? "1" : "all", ds.p50, total / ds.p50 / 1e9, ss.p50, total / ss.p50 / 1e9,
                100.0 * ss.p50 / ds.p50);
  }
  // In memory: digest + row in one read, against the digest alone.
  struct Tensor {
    const char *name = nullptr;
    pot_dtype dtype{};
    const uint64_t *shape = nullptr;
    size_t shape_len = 0, len = 0;
    const void *data = nullptr;
  };
  const auto each_tensor = [&](const auto &use) {
    for (size_t i = 0; i < pot_safetensors_count(f); ++i) {
      Tensor t;
      POT_CHECK(pot_safetensors_tensor, &t.name, &t.dtype, &t.shape, &t.shape_len, &t.data, &t.len, f, i);
      use(t);
    }
  };
  for (uint32_t threads : {1u, 0u}) {
    std::vector<double> digest_s, fused_s;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      each_tensor([&](const Tensor &t) {
        pot_digest d;
        POT_CHECK(pot_tensor_digest, &d, t.name, t.dtype, t.shape, t.shape_len, t.data, t.len, threads);
      });
      digest_s.push_back(bench::seconds_since(t0));
      pot_state *s = nullptr;
      POT_CHECK(pot_state_new, &s);
      POT_CHECK(pot_state_set_threads, s, threads);
      t0 = Clock::now();
      each_tensor([&](const Tensor &t) {
        POT_CHECK(pot_state_add_tensor, s, t.name, t.dtype, t.shape, t.shape_len, t.data, t.len);
      });
      fused_s.push_back(bench::seconds_since(t0));
      pot_bytes table{};
      POT_CHECK(pot_state_stats, &table, s);
      if (table.len != reference.len || std::memcmp(table.data, reference.data, table.len) != 0) status = 3;
      pot_bytes_free(&table);
      pot_state_free(s);
    }
    const auto ds = bench::summarize(digest_s), fs = bench::summarize(fused_s);
    std::printf("threads %s, in memory: digest alone median %.3f s, digest + statistics in one read median %.3f s: "
                "statistics = %.1f%% of the digest\n",
                threads ? "1" : "all", ds.p50, fs.p50, 100.0 * (fs.p50 - ds.p50) / ds.p50);
  }
  if (status) std::printf("ERROR: the table depends on the thread count or the path\n");
  pot_bytes_free(&reference);
  pot_safetensors_free(f);
  if (keep.empty()) std::remove(path.c_str());
  return status;
}
