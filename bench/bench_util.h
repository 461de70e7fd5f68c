// bench_util.h - small helpers shared by the pot benchmarks: timing,
// statistics, pseudo-random bytes, error checks and a minimal JSON writer.
//
// The benchmarks use only the public C API (pot.h); nothing here reaches into
// the library's internals.
#ifndef POT_BENCH_UTIL_H
#define POT_BENCH_UTIL_H

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pot.h"

namespace bench {

using Clock = std::chrono::steady_clock;

// Seconds elapsed since t0.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Aborts the benchmark with the pot error when a call fails.
inline void check(pot_status st, pot_error *err, const char *what) {
  if (st == POT_OK) return;
  std::fprintf(stderr, "error: %s failed: %s: %s\n", what, pot_status_name(st),
               err ? pot_error_message(err) : "(no message)");
  pot_error_free(err);
  std::exit(2);
}

// Calls a pot function returning pot_status with a trailing pot_error**.
#define POT_CHECK(call_without_err, ...)                               \
  do {                                                                 \
    pot_error *bench_err_ = nullptr;                                   \
    pot_status bench_st_ = call_without_err(__VA_ARGS__, &bench_err_); \
    ::bench::check(bench_st_, bench_err_, #call_without_err);          \
  } while (0)

// splitmix64: a fast, good-enough generator for synthetic data and sampling.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (inclusive); the modulo bias is irrelevant here.
  uint64_t uniform(uint64_t lo, uint64_t hi) { return lo + next() % (hi - lo + 1); }
};

// Fills [p, p + n) with pseudo-random bytes (this also touches every page).
inline void fill_random(uint8_t *p, size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng.next();
    std::memcpy(p + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = rng.next();
    std::memcpy(p + i, &v, n - i);
  }
}

// Summary statistics of a sample (values in whatever unit the caller uses).
struct Stats {
  size_t n = 0;
  double mean = 0, min = 0, p50 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentile of a sorted sample, q in [0, 1].
inline double percentile_sorted(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

inline Stats summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.p50 = percentile_sorted(v, 0.50);
  s.p99 = percentile_sorted(v, 0.99);
  return s;
}

// Lower-case hex of bytes.
inline std::string hex(const uint8_t *p, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string h;
  h.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    h += digits[p[i] >> 4];
    h += digits[p[i] & 15];
  }
  return h;
}
inline std::string hex(const std::string &s) { return hex(reinterpret_cast<const uint8_t *>(s.data()), s.size()); }
inline std::string hex(const pot_bytes &b) { return hex(b.data, b.len); }

// Lower-case hex of a digest.
inline std::string hex(const pot_digest &d) {
  char buf[2 * POT_DIGEST_SIZE + 1];
  POT_CHECK(pot_digest_to_hex, buf, &d);
  return buf;
}

inline bool same(const pot_digest &a, const pot_digest &b) {
  return std::memcmp(a.bytes, b.bytes, POT_DIGEST_SIZE) == 0;
}

// Text of a whole command's standard output (empty on failure).
inline std::string run_command(const std::string &cmd) {
  std::string out;
  FILE *f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

// First line of `cmd`'s output, without the newline.
inline std::string first_line(const std::string &cmd) {
  std::string s = run_command(cmd);
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// CPU model from /proc/cpuinfo ("unknown" when absent).
inline std::string cpu_model() {
  std::string m = first_line("grep -m1 '^model name' /proc/cpuinfo 2>/dev/null");
  const size_t colon = m.find(':');
  if (colon == std::string::npos) return "unknown";
  m = m.substr(colon + 1);
  m.erase(0, m.find_first_not_of(" \t"));
  return m;
}

// A flat JSON object built key by key. Values are numbers, strings, booleans
// or raw JSON text (for nested objects and arrays built with another Json).
class Json {
 public:
  Json &num(const std::string &key, double v) { return raw(key, number(v)); }
  Json &integer(const std::string &key, uint64_t v) { return raw(key, std::to_string(v)); }
  Json &boolean(const std::string &key, bool v) { return raw(key, v ? "true" : "false"); }
  Json &str(const std::string &key, const std::string &v) { return raw(key, quote(v)); }
  Json &raw(const std::string &key, const std::string &json) {
    if (!body_.empty()) body_ += ", ";
    body_ += quote(key) + ": " + json;
    return *this;
  }
  Json &stats(const std::string &key, const Stats &s) {
    Json o;
    o.integer("n", s.n)
        .num("mean", s.mean)
        .num("min", s.min)
        .num("p50", s.p50)
        .num("p99", s.p99)
        .num("max", s.max);
    return raw(key, o.text());
  }
  std::string text() const { return "{" + body_ + "}"; }

  // A number as JSON text (null when not finite).
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }

  static std::string quote(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
    return out + "\"";
  }

 private:
  std::string body_;
};

// JSON array of already-encoded values.
inline std::string json_array(const std::vector<std::string> &items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

// ---------------------------------------------------------------------------
// Files and the page cache (plain POSIX; used to describe the conditions of
// a measurement, never to compute anything pot computes).

// Size of a file in bytes, or -1 when it cannot be stat'ed.
// Peak resident set of this process so far, MiB (getrusage).
inline double peak_rss_mib() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

inline long long file_size(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_size);
}

// Fraction of the file's pages resident in the page cache (mincore), or -1
// when it cannot be determined.
inline double resident_fraction(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  double result = -1;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const size_t len = static_cast<size_t>(st.st_size);
    void *map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> vec((len + page - 1) / page);
      if (::mincore(map, len, vec.data()) == 0) {
        size_t resident = 0;
        for (unsigned char v : vec) resident += v & 1;
        result = static_cast<double>(resident) / static_cast<double>(vec.size());
      }
      ::munmap(map, len);
    }
  }
  ::close(fd);
  return result;
}

// Writes the file's dirty pages back and asks the kernel to drop its pages
// from the page cache (posix_fadvise DONTNEED: affects this file only).
// Returns false when a call fails.
inline bool drop_file_cache(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fdatasync(fd) == 0 && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// ---------------------------------------------------------------------------
// Machine activity: how much CPU time other processes (and the hypervisor,
// as steal time) took while a benchmark ran. A busy machine invalidates the
// figures, so both benchmarks print this next to their results.

struct CpuSnapshot {
  double busy = 0;   // seconds of CPU time on all CPUs, not idle, not steal
  double steal = 0;  // seconds stolen by the hypervisor (all CPUs)
  double self = 0;   // seconds of CPU time used by this process
  Clock::time_point wall = Clock::now();
};

inline CpuSnapshot cpu_snapshot() {
  CpuSnapshot s;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (FILE *f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    // cpu user nice system idle iowait irq softirq steal ...
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8) {
      s.busy = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6]) / tick;
      s.steal = static_cast<double>(v[7]) / tick;
    }
    std::fclose(f);
  }
  struct rusage ru {};
  if (::getrusage(RUSAGE_SELF, &ru) == 0)
    s.self = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  s.wall = Clock::now();
  return s;
}

// Activity between two snapshots, as shares of one core over the interval.
struct CpuActivity {
  double wall_s = 0;
  double others = 0;  // CPU used by other processes, in cores (1.0 = one core busy)
  double steal = 0;   // CPU stolen by the hypervisor, in cores
};

inline CpuActivity cpu_activity(const CpuSnapshot &a, const CpuSnapshot &b) {
  CpuActivity r;
  r.wall_s = std::chrono::duration<double>(b.wall - a.wall).count();
  if (r.wall_s <= 0) return r;
  r.others = std::max(0.0, (b.busy - a.busy) - (b.self - a.self)) / r.wall_s;
  r.steal = (b.steal - a.steal) / r.wall_s;
  return r;
}

// One line describing the activity, with a warning when the machine was busy.
inline std::string describe_activity(const CpuActivity &c) {
  char buf[256];
  if (c.wall_s < 1.0) {  // /proc/stat counts in clock ticks (usually 10 ms)
    std::snprintf(buf, sizeof buf, "machine activity not measured (interval of %.2f s too short)",
                  c.wall_s);
    return buf;
  }
  std::snprintf(
      buf, sizeof buf,
      "other processes used %.2f cores and the hypervisor stole %.2f cores on average "
      "over %.1f s%s",
      c.others, c.steal, c.wall_s,
      c.others > 0.1 || c.steal > 0.1 ? "  ** WARNING: machine busy, figures unreliable **" : "");
  return buf;
}

// The activity as a JSON object (cores are averages over wall_s seconds).
inline std::string activity_json(const CpuActivity &c) {
  return Json()
      .num("wall_s", c.wall_s)
      .num("other_cores", c.others)
      .num("steal_cores", c.steal)
      .text();
}

}  // namespace bench

#endif  // POT_BENCH_UTIL_H
