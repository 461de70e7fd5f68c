// bench_state_digest - throughput of the state digest (pot_state_*) and of
// pot_safetensors_digest_file, compared with OpenSSL's own SHA-256 speed.
//
// What it does:
//  1. Builds a synthetic state of about 1 GiB in memory: three large float32
//     tensors (embedding, head, an optimizer moment) and ~100 small ones
//     (norm weights, biases of sizes that are not chunk multiples, scalars),
//     filled with pseudo-random bytes, so every page is touched before timing.
//  2. Times pot_state_new + pot_state_set_threads + pot_state_add_tensor (each
//     tensor) + pot_state_digest for 1 thread, 2 threads and 0 (= all cores),
//     several repetitions interleaved, and reports best and median throughput
//     in GB/s (10^9 bytes/s) and GiB/s (2^30 bytes/s). The digest must be the
//     same for every thread count (exit status 3 otherwise).
//  3. Runs `openssl speed -evp sha256 -bytes 16384 -seconds 3` (before and
//     after step 2; the faster figure is the reference) and prints the ratios
//     pot(1 thread)/openssl and pot(2 threads)/openssl against the targets
//     0.9x and 1.8x.
//  4. Writes the same tensors as a safetensors file in /tmp with
//     pot_safetensors_writer and times pot_safetensors_digest_file (open, mmap,
//     page faults, hashing) with 1 and 2 threads, first with the page cache
//     warm (the file was just written), then cold (the file's pages dropped
//     with posix_fadvise). The file digest must equal the in-memory state
//     digest. The file is deleted at exit.
//
// Usage: bench_state_digest [--json] [--reps N] [--mib N] [--tmpdir DIR]
//                           [--openssl-seconds N] [--no-openssl] [--no-file]
// With --json, the human-readable report goes to stderr and a JSON object to
// stdout. Exit status: 0 when the run completed (targets are reported, not
// enforced), 1 for bad options, 2 for a pot error, 3 for a digest mismatch.
//
// Only the public C API (pot.h) is used.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "pot.h"

namespace {

using bench::Clock;
using bench::Json;
using bench::Stats;

constexpr double kGB = 1e9;
constexpr double kGiB = 1073741824.0;
constexpr double kTargetSingle = 0.9;  // pot 1 thread / openssl
constexpr double kTargetDual = 1.8;    // pot 2 threads / openssl

struct Options {
  bool json = false;
  unsigned reps = 5;
  uint64_t mib = 1024;
  std::string tmpdir = "/tmp";
  unsigned openssl_seconds = 3;
  bool openssl = true;
  bool file = true;
};

Options parse_options(int argc, char **argv) {
  Options o;
  bool no_openssl = false, no_file = false;
  CLI::App app{"bench_state_digest: state digest throughput against openssl speed (docs/performance.md)"};
  app.add_flag("--json", o.json, "JSON object on stdout (report on stderr)");
  app.add_option("--reps", o.reps, "timed repetitions per thread count")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--mib", o.mib, "approximate state size in MiB")->check(CLI::Range(uint64_t{16}, uint64_t{1} << 40))->capture_default_str();
  app.add_option("--tmpdir", o.tmpdir, "where the safetensors file is written")->capture_default_str();
  app.add_option("--openssl-seconds", o.openssl_seconds, "duration of each openssl speed run")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--no-openssl", no_openssl, "skip the OpenSSL reference");
  app.add_flag("--no-file", no_file, "skip the safetensors file benchmark");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    std::exit(app.exit(e) == 0 ? 0 : 1);
  }
  o.openssl = !no_openssl;
  o.file = !no_file;
  return o;
}

// ---------------------------------------------------------------------------
// The synthetic state

struct Tensor {
  std::string name;
  pot_dtype dtype;
  std::vector<uint64_t> shape;
  size_t offset = 0;  // into the state buffer
  size_t nbytes = 0;
};

struct State {
  std::vector<Tensor> tensors;
  std::unique_ptr<uint8_t[]> buffer;  // all tensor bytes, 64-byte aligned slots
  size_t total_bytes = 0;             // sum of the tensors' bytes

  const uint8_t *data(const Tensor &t) const { return buffer.get() + t.offset; }
};

// About `mib` MiB: ~100 small tensors plus three large float32 matrices of
// 4096 columns that take the rest (40% / 35% / 25%).
State make_state(uint64_t mib) {
  State s;
  auto add = [&](std::string name, pot_dtype dtype, std::vector<uint64_t> shape) {
    Tensor t{std::move(name), dtype, std::move(shape)};
    t.nbytes = pot_dtype_size(dtype);
    for (uint64_t d : t.shape) t.nbytes *= d;
    s.tensors.push_back(std::move(t));
  };
  for (int layer = 0; layer < 32; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    add(p + "input_layernorm.weight", POT_DTYPE_F32, {4096});  // 16 KiB
    add(p + "self_attn.o_proj.bias", POT_DTYPE_F32, {3000});   // 12000 B: not a chunk multiple
    add(p + "mlp.gate.scale", POT_DTYPE_BF16, {33});           // 66 B
  }
  add("model.norm.weight", POT_DTYPE_F32, {4096});
  add("optimizer.step", POT_DTYPE_I64, {});  // scalar
  add("scheduler.lr", POT_DTYPE_F64, {});    // scalar
  size_t small = 0;
  for (const Tensor &t : s.tensors) small += t.nbytes;

  const uint64_t cols = 4096, row_bytes = cols * 4;
  const uint64_t rows = (mib * 1048576 - small) / row_bytes;
  const uint64_t r1 = rows * 40 / 100, r2 = rows * 35 / 100, r3 = rows - r1 - r2;
  add("model.embed_tokens.weight", POT_DTYPE_F32, {r1, cols});
  add("lm_head.weight", POT_DTYPE_F32, {r2, cols});
  add("optimizer.exp_avg.model.embed_tokens.weight", POT_DTYPE_F32, {r3, cols});

  size_t off = 0;
  for (Tensor &t : s.tensors) {
    t.offset = off;
    off += (t.nbytes + 63) / 64 * 64;
    s.total_bytes += t.nbytes;
  }
  // Default-initialised (not zeroed): fill_random below is the first touch.
  s.buffer.reset(new uint8_t[off]);
  bench::fill_random(s.buffer.get(), off, 0x706f742d62656e63ULL);
  return s;
}

// One timed state digest: everything from pot_state_new to pot_state_digest.
double time_state_digest(const State &s, uint32_t threads, pot_digest *out) {
  const auto t0 = Clock::now();
  pot_state *st = nullptr;
  POT_CHECK(pot_state_new, &st);
  POT_CHECK(pot_state_set_threads, st, threads);
  for (const Tensor &t : s.tensors)
    POT_CHECK(pot_state_add_tensor, st, t.name.c_str(), t.dtype, t.shape.data(), t.shape.size(),
              s.data(t), t.nbytes);
  POT_CHECK(pot_state_digest, out, st);
  pot_state_free(st);
  return bench::seconds_since(t0);
}

// ---------------------------------------------------------------------------
// OpenSSL reference

struct OpensslRef {
  bool ok = false;
  double bytes_per_s = 0;  // the 16384-byte column, converted from 1000s of bytes/s
  std::string line;        // the line parsed
};

// Runs openssl speed and parses the row "sha256  1998449.32k" (the figure is
// in 1000s of bytes per second).
OpensslRef openssl_speed(unsigned seconds) {
  OpensslRef r;
  const std::string cmd =
      "openssl speed -evp sha256 -bytes 16384 -seconds " + std::to_string(seconds) + " 2>/dev/null";
  const std::string out = bench::run_command(cmd);
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    const std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    char name[64], value[64];
    if (std::sscanf(line.c_str(), "%63s %63s", name, value) != 2) continue;
    std::string n = name;
    for (char &c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string v = value;
    if (n != "sha256" || v.empty() || v.back() != 'k') continue;
    char *end = nullptr;
    const double k = std::strtod(v.c_str(), &end);
    if (end != v.c_str() + v.size() - 1 || k <= 0) continue;
    r.ok = true;
    r.bytes_per_s = k * 1000.0;
    r.line = line;
  }
  return r;
}

// ---------------------------------------------------------------------------
// Reporting helpers

struct Series {
  uint32_t threads;
  std::vector<double> seconds;
};

std::string thread_label(uint32_t threads) {
  if (threads) return std::to_string(threads);
  return "0 (all=" + std::to_string(std::thread::hardware_concurrency()) + ")";
}

// The safetensors file, removed at exit (also after an error exit).
std::string g_file_path;
void remove_file() {
  if (!g_file_path.empty()) ::unlink(g_file_path.c_str());
}

}  // namespace

int main(int argc, char **argv) {
  const Options opt = parse_options(argc, argv);
  FILE *out = opt.json ? stderr : stdout;  // the human-readable report
  Json json;
  json.str("benchmark", "state_digest").str("pot_version", pot_version_string());

  // Machine description.
  const std::string cpu = bench::cpu_model();
  const std::string ossl = bench::first_line("openssl version 2>/dev/null");
  const unsigned ncpu = std::thread::hardware_concurrency();
  std::fprintf(out, "pot %s state digest benchmark\n", pot_version_string());
  std::fprintf(out, "machine: %u logical CPUs, %s; %s\n", ncpu, cpu.c_str(), ossl.c_str());
  json.raw("machine",
           Json().integer("logical_cpus", ncpu).str("cpu", cpu).str("openssl", ossl).text());

  // 1. The synthetic state.
  auto t0 = Clock::now();
  const State state = make_state(opt.mib);
  std::fprintf(out, "state: %zu tensors, %zu bytes (%.3f GiB, %.3f GB), filled in %.2f s\n",
               state.tensors.size(), state.total_bytes, state.total_bytes / kGiB,
               state.total_bytes / kGB, bench::seconds_since(t0));
  json.integer("state_tensors", state.tensors.size()).integer("state_bytes", state.total_bytes);

  // 3a. OpenSSL reference (before).
  std::vector<OpensslRef> refs;
  if (opt.openssl) {
    std::fprintf(out, "running openssl speed -evp sha256 -bytes 16384 -seconds %u ...\n",
                 opt.openssl_seconds);
    std::fflush(out);
    refs.push_back(openssl_speed(opt.openssl_seconds));
  }

  // 2. State digest with 1, 2 and 0 (all) threads, repetitions interleaved.
  pot_digest reference{};
  const bench::CpuSnapshot cpu0 = bench::cpu_snapshot();
  time_state_digest(state, 0, &reference);  // warm-up (lazy initialisation), not counted
  std::vector<Series> series = {{1, {}}, {2, {}}, {0, {}}};
  bool digests_agree = true;
  for (unsigned rep = 0; rep < opt.reps; ++rep) {
    for (Series &s : series) {
      pot_digest d{};
      s.seconds.push_back(time_state_digest(state, s.threads, &d));
      if (!bench::same(d, reference)) {
        digests_agree = false;
        std::fprintf(stderr, "error: digest with threads=%u is %s, expected %s\n", s.threads,
                     bench::hex(d).c_str(), bench::hex(reference).c_str());
      }
    }
  }

  const bench::CpuActivity activity = bench::cpu_activity(cpu0, bench::cpu_snapshot());

  // 3b. OpenSSL reference (after), then pick the faster run.
  if (opt.openssl) {
    refs.push_back(openssl_speed(opt.openssl_seconds));
  }
  OpensslRef ref;
  std::vector<std::string> ref_json;
  for (const OpensslRef &r : refs) {
    ref_json.push_back(r.ok ? Json().num("bytes_per_s", r.bytes_per_s).str("line", r.line).text()
                            : std::string("null"));
    if (r.ok && r.bytes_per_s > ref.bytes_per_s) ref = r;
  }

  std::fprintf(out, "\nstate digest (pot_state_new .. pot_state_digest), %u reps each:\n",
               opt.reps);
  std::fprintf(out, "  %-12s %10s %10s %11s %11s %10s\n", "threads", "best GB/s", "med GB/s",
               "best GiB/s", "med GiB/s", "best s");
  std::vector<std::string> series_json;
  double med_gbps[3] = {}, best_gbps[3] = {};
  for (size_t i = 0; i < series.size(); ++i) {
    const Stats st = bench::summarize(series[i].seconds);
    const double bytes = static_cast<double>(state.total_bytes);
    best_gbps[i] = bytes / st.min / kGB;
    med_gbps[i] = bytes / st.p50 / kGB;
    std::fprintf(out, "  %-12s %10.3f %10.3f %11.3f %11.3f %10.4f\n",
                 thread_label(series[i].threads).c_str(), best_gbps[i], med_gbps[i],
                 bytes / st.min / kGiB, bytes / st.p50 / kGiB, st.min);
    std::vector<std::string> secs;
    for (double x : series[i].seconds) secs.push_back(Json::number(x));
    series_json.push_back(Json()
                              .integer("threads", series[i].threads)
                              .num("best_GBps", best_gbps[i])
                              .num("median_GBps", med_gbps[i])
                              .num("best_GiBps", bytes / st.min / kGiB)
                              .num("median_GiBps", bytes / st.p50 / kGiB)
                              .raw("seconds", bench::json_array(secs))
                              .text());
  }
  std::fprintf(out, "  digest %s (%s across thread counts)\n", bench::hex(reference).c_str(),
               digests_agree ? "identical" : "DIFFERENT");
  std::fprintf(out, "  during these runs %s\n", bench::describe_activity(activity).c_str());
  json.raw("state_digest", bench::json_array(series_json))
      .raw("state_digest_machine_activity", bench::activity_json(activity))
      .str("digest", bench::hex(reference))
      .boolean("digests_identical", digests_agree);

  // Ratios against OpenSSL.
  if (opt.openssl) {
    json.raw("openssl_runs", bench::json_array(ref_json));
    if (!ref.ok) {
      std::fprintf(out, "\nopenssl speed: could not parse its output; no ratios\n");
    } else {
      const double o = ref.bytes_per_s / kGB;
      std::fprintf(out, "\nopenssl speed -evp sha256, 16384-byte blocks: ");
      for (size_t i = 0; i < refs.size(); ++i)
        std::fprintf(out, "%s%.3f GB/s", i ? ", " : "",
                     refs[i].ok ? refs[i].bytes_per_s / kGB : 0.0);
      std::fprintf(out, " (reference: the faster, %.3f GB/s = %.3f GiB/s)\n", o,
                   ref.bytes_per_s / kGiB);
      const double r1b = best_gbps[0] / o, r1m = med_gbps[0] / o;
      const double r2b = best_gbps[1] / o, r2m = med_gbps[1] / o;
      std::fprintf(out, "  1 thread  / openssl: best %.3fx, median %.3fx  (target >= %.1fx: %s)\n",
                   r1b, r1m, kTargetSingle, r1m >= kTargetSingle ? "met" : "NOT met");
      std::fprintf(out, "  2 threads / openssl: best %.3fx, median %.3fx  (target >= %.1fx: %s)\n",
                   r2b, r2m, kTargetDual, r2m >= kTargetDual ? "met" : "NOT met");
      std::fprintf(out, "  (targets judged on the median)\n");
      json.num("openssl_GBps", o)
          .raw("ratios", Json()
                             .num("single_best", r1b)
                             .num("single_median", r1m)
                             .num("dual_best", r2b)
                             .num("dual_median", r2m)
                             .text())
          .raw("targets", Json()
                              .num("single_min_ratio", kTargetSingle)
                              .num("dual_min_ratio", kTargetDual)
                              .boolean("single_met", r1m >= kTargetSingle)
                              .boolean("dual_met", r2m >= kTargetDual)
                              .text());
    }
  }

  // 4. pot_safetensors_digest_file on the same tensors written to a file.
  bool file_agrees = true;
  if (opt.file) {
    g_file_path = opt.tmpdir + "/pot-bench-state-" + std::to_string(::getpid()) + ".safetensors";
    std::atexit(remove_file);
    t0 = Clock::now();
    pot_safetensors_writer *w = nullptr;
    POT_CHECK(pot_safetensors_writer_new, &w);
    for (const Tensor &t : state.tensors)
      POT_CHECK(pot_safetensors_writer_add, w, t.name.c_str(), t.dtype, t.shape.data(),
                t.shape.size(), state.data(t), t.nbytes);
    POT_CHECK(pot_safetensors_writer_write, w, g_file_path.c_str());
    pot_safetensors_writer_free(w);
    const double write_s = bench::seconds_since(t0);
    const long long fsize = bench::file_size(g_file_path);
    std::fprintf(out, "\nsafetensors file %s: %lld bytes, written in %.2f s\n", g_file_path.c_str(),
                 fsize, write_s);

    // Runs pot_safetensors_digest_file once, checking the digest.
    auto run_file = [&](uint32_t threads) {
      pot_digest d{};
      const auto t1 = Clock::now();
      POT_CHECK(pot_safetensors_digest_file, &d, g_file_path.c_str(), threads);
      const double s = bench::seconds_since(t1);
      if (!bench::same(d, reference)) {
        file_agrees = false;
        std::fprintf(stderr, "error: file digest with threads=%u is %s, expected %s\n", threads,
                     bench::hex(d).c_str(), bench::hex(reference).c_str());
      }
      return s;
    };

    std::fprintf(out, "pot_safetensors_digest_file (open + mmap + page faults + hashing):\n");
    std::fprintf(out, "  %-8s %-6s %9s %10s %10s %11s %11s\n", "cache", "thr", "resident",
                 "best GB/s", "med GB/s", "best GiB/s", "med GiB/s");
    std::vector<std::string> file_json;
    const bench::CpuSnapshot fcpu0 = bench::cpu_snapshot();
    const double bytes = static_cast<double>(state.total_bytes);  // tensor bytes hashed
    // Warm: the file was just written, so its pages are in the page cache.
    for (uint32_t threads : {1u, 2u}) {
      const double resident = bench::resident_fraction(g_file_path);
      std::vector<double> secs;
      for (unsigned rep = 0; rep < opt.reps; ++rep) secs.push_back(run_file(threads));
      const Stats st = bench::summarize(secs);
      std::fprintf(out, "  %-8s %-6u %8.1f%% %10.3f %10.3f %11.3f %11.3f\n", "warm", threads,
                   100 * resident, bytes / st.min / kGB, bytes / st.p50 / kGB,
                   bytes / st.min / kGiB, bytes / st.p50 / kGiB);
      file_json.push_back(Json()
                              .str("cache", "warm")
                              .integer("threads", threads)
                              .num("resident_fraction_before", resident)
                              .num("best_GBps", bytes / st.min / kGB)
                              .num("median_GBps", bytes / st.p50 / kGB)
                              .integer("reps", secs.size())
                              .text());
    }
    // Cold: drop the file's pages first (one run per thread count: a cold run
    // is dominated by the storage, and it warms the cache as it goes).
    for (uint32_t threads : {1u, 2u}) {
      const bool dropped = bench::drop_file_cache(g_file_path);
      const double resident = bench::resident_fraction(g_file_path);
      const double s = run_file(threads);
      std::fprintf(out, "  %-8s %-6u %8.1f%% %10.3f %10s %11.3f %11s%s\n", "cold", threads,
                   100 * resident, bytes / s / kGB, "-", bytes / s / kGiB, "-",
                   dropped ? "" : "  (posix_fadvise failed)");
      file_json.push_back(Json()
                              .str("cache", "cold")
                              .integer("threads", threads)
                              .num("resident_fraction_before", resident)
                              .num("GBps", bytes / s / kGB)
                              .num("seconds", s)
                              .text());
    }
    const bench::CpuActivity factivity = bench::cpu_activity(fcpu0, bench::cpu_snapshot());
    std::fprintf(out,
                 "  (resident = share of the file's pages in the page cache before the runs;\n"
                 "   throughput counts tensor bytes; file digest %s the state digest)\n",
                 file_agrees ? "equals" : "DIFFERS FROM");
    std::fprintf(out, "  during these runs %s\n", bench::describe_activity(factivity).c_str());
    json.raw("safetensors_file",
             Json()
                 .raw("machine_activity", bench::activity_json(factivity))
                 .integer("file_bytes", fsize > 0 ? static_cast<uint64_t>(fsize) : 0)
                 .num("write_seconds", write_s)
                 .boolean("digest_matches_state", file_agrees)
                 .raw("runs", bench::json_array(file_json))
                 .text());
    remove_file();
    g_file_path.clear();
  }

  if (opt.json) std::printf("%s\n", json.text().c_str());
  if (!digests_agree || !file_agrees) {
    std::fprintf(stderr, "FAILED: digests differ\n");
    return 3;
  }
  return 0;
}
