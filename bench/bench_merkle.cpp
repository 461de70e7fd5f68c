// bench_merkle - RFC 6962 log and stored-tree performance (pot_log_*,
// pot_tree_*, pot_merkle_verify_*).
//
// What it does:
//  (a) Streaming appends on one core: pot_log_append_hash of precomputed leaf
//      hashes, and pot_log_append of 64-byte leaf records (which includes the
//      leaf hashing), --log-leaves leaves (default 5,000,000), three
//      repetitions each; reports leaves/s (target >= 1,000,000 leaves/s).
//      Both logs must end with the same root.
//  (b) Builds a stored tree of --leaves leaves (default 10,000,000) in a file
//      (pot_tree_open on a new path, pot_tree_append_hash, pot_tree_flush) and
//      reports build time and file size. Then, for --pairs random (index,
//      size) and (size1, size2) pairs (default 20,000 each, sizes uniform in
//      [1, leaves]), times each call of pot_tree_inclusion_proof,
//      pot_merkle_verify_inclusion, pot_tree_consistency_proof and
//      pot_merkle_verify_consistency (and pot_tree_root, which a prover also
//      needs) and reports mean, p50, p99 and max microseconds (target: under
//      100 us each). Every proof must verify (exit status 3 otherwise).
//  (c) Frees the tree, drops the file's pages from the page cache
//      (posix_fadvise), reopens the file with pot_tree_open and repeats (b)'s
//      measurements on the same pairs, dropping the pages again before the
//      consistency proofs and before the roots: a cold start, reported only.
//      (Each loop warms the cache as it goes: the later calls of a loop are
//      warmer than the first ones.)
//  The tree file is deleted at exit.
//
// Usage: bench_merkle [--json] [--leaves N] [--log-leaves N] [--pairs N]
//                     [--tree PATH] [--seed N] [--no-cold]
// With --json, the human-readable report goes to stderr and a JSON object to
// stdout. Exit status: 0 when the run completed (targets are reported, not
// enforced), 1 for bad options, 2 for a pot error, 3 for a proof or root that
// does not check.
//
// Only the public C API (pot.h) is used.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "pot.h"

namespace {

using bench::Clock;
using bench::Json;
using bench::Stats;

constexpr double kTargetLeavesPerSec = 1e6;
constexpr double kTargetMicros = 100.0;
constexpr size_t kRecordBytes = 64;  // bytes of leaf data per leaf

struct Options {
  bool json = false;
  uint64_t leaves = 10'000'000;
  uint64_t log_leaves = 5'000'000;
  uint64_t pairs = 20'000;
  std::string tree_path;  // default: /tmp/pot-bench-merkle-<pid>.tree
  uint64_t seed = 20240601;
  bool cold = true;
};

Options parse_options(int argc, char **argv) {
  Options o;
  bool no_cold = false;
  CLI::App app{"bench_merkle: log appends and proofs on a stored tree (docs/performance.md)"};
  app.add_flag("--json", o.json, "JSON object on stdout (report on stderr)");
  app.add_option("--leaves", o.leaves, "leaves of the stored tree")->check(CLI::Range(uint64_t{2}, UINT64_MAX))->capture_default_str();
  app.add_option("--log-leaves", o.log_leaves, "leaves appended to the streaming log")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--pairs", o.pairs, "random pairs per proof kind")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--tree", o.tree_path, "tree file to create (must not exist; deleted at exit; default /tmp/pot-bench-merkle-<pid>.tree)");
  app.add_option("--seed", o.seed, "seed of the leaf data and of the pairs")->capture_default_str();
  app.add_flag("--no-cold", no_cold, "skip the reopened, cold-cache measurements");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    std::exit(app.exit(e) == 0 ? 0 : 1);
  }
  o.cold = !no_cold;
  if (o.tree_path.empty())
    o.tree_path = "/tmp/pot-bench-merkle-" + std::to_string(::getpid()) + ".tree";
  return o;
}

// The tree file, removed at exit (also after an error exit) once created.
std::string g_tree_path;
void remove_tree_file() {
  if (!g_tree_path.empty()) ::unlink(g_tree_path.c_str());
}

// Leaf data: kRecordBytes pseudo-random bytes per leaf, and their leaf hashes.
struct Leaves {
  std::vector<uint8_t> data;
  std::vector<pot_digest> hashes;
  const uint8_t *record(uint64_t i) const { return data.data() + i * kRecordBytes; }
};

Leaves make_leaves(uint64_t n, uint64_t seed) {
  Leaves l;
  l.data.resize(n * kRecordBytes);
  bench::fill_random(l.data.data(), l.data.size(), seed);
  l.hashes.resize(n);
  for (uint64_t i = 0; i < n; ++i)
    POT_CHECK(pot_merkle_leaf_hash, &l.hashes[i], l.record(i), kRecordBytes);
  return l;
}

// ---------------------------------------------------------------------------
// (a) streaming log

struct LogRun {
  double seconds;
  pot_digest root;
};

// Appends the first n leaves to a new log, by hash or by data.
LogRun run_log(const Leaves &leaves, uint64_t n, bool by_hash) {
  pot_log *log = nullptr;
  POT_CHECK(pot_log_new, &log);
  const auto t0 = Clock::now();
  if (by_hash) {
    for (uint64_t i = 0; i < n; ++i) POT_CHECK(pot_log_append_hash, log, &leaves.hashes[i]);
  } else {
    for (uint64_t i = 0; i < n; ++i) POT_CHECK(pot_log_append, log, leaves.record(i), kRecordBytes);
  }
  const double s = bench::seconds_since(t0);
  LogRun r{s, {}};
  POT_CHECK(pot_log_root, &r.root, log);
  pot_log_free(log);
  return r;
}

// ---------------------------------------------------------------------------
// (b), (c) stored tree proofs

struct Pair {
  uint64_t a, b;  // (index, size) or (size1, size2)
};

// Per-operation latencies of one measurement phase, in microseconds.
struct Phase {
  std::string name;
  std::vector<double> incl_gen, incl_verify, cons_gen, cons_verify, root;
  size_t failures = 0;
  double incl_proof_hashes = 0, cons_proof_hashes = 0;  // mean proof lengths
};

double micros_since(Clock::time_point t0) { return 1e6 * bench::seconds_since(t0); }

// Generates, then verifies, every proof: inclusion proofs, consistency
// proofs, the roots of every size used, then verification. When drop_path is
// not empty, the file's pages are dropped from the page cache before each of
// the three generation loops, so that each starts cold.
Phase measure(const std::string &name, const pot_tree *tree, const Leaves &leaves,
              const std::vector<Pair> &incl, const std::vector<Pair> &cons,
              const std::string &drop_path) {
  Phase ph;
  ph.name = name;
  auto maybe_drop = [&] {
    if (!drop_path.empty() && !bench::drop_file_cache(drop_path))
      std::fprintf(stderr, "warning: could not drop the page cache of %s\n", drop_path.c_str());
  };
  std::vector<pot_bytes> incl_proofs(incl.size()), cons_proofs(cons.size());
  maybe_drop();
  for (size_t i = 0; i < incl.size(); ++i) {
    const auto t0 = Clock::now();
    POT_CHECK(pot_tree_inclusion_proof, &incl_proofs[i], tree, incl[i].a, incl[i].b);
    ph.incl_gen.push_back(micros_since(t0));
  }
  maybe_drop();
  for (size_t i = 0; i < cons.size(); ++i) {
    const auto t0 = Clock::now();
    POT_CHECK(pot_tree_consistency_proof, &cons_proofs[i], tree, cons[i].a, cons[i].b);
    ph.cons_gen.push_back(micros_since(t0));
  }
  // Roots of every size used (timed: a prover publishes them too).
  auto root_of = [&](uint64_t size) {
    pot_digest r{};
    const auto t0 = Clock::now();
    POT_CHECK(pot_tree_root, &r, tree, size);
    ph.root.push_back(micros_since(t0));
    return r;
  };
  std::vector<pot_digest> incl_roots, cons_roots1, cons_roots2;
  maybe_drop();
  for (const Pair &p : incl) incl_roots.push_back(root_of(p.b));
  for (const Pair &p : cons) {
    cons_roots1.push_back(root_of(p.a));
    cons_roots2.push_back(root_of(p.b));
  }

  // Verification; the leaf hash comes from our own copy, not from the tree.
  for (size_t i = 0; i < incl.size(); ++i) {
    pot_error *err = nullptr;
    const auto t0 = Clock::now();
    const pot_status st =
        pot_merkle_verify_inclusion(incl[i].a, incl[i].b, &leaves.hashes[incl[i].a],
                                    incl_proofs[i].data, incl_proofs[i].len, &incl_roots[i], &err);
    ph.incl_verify.push_back(micros_since(t0));
    if (st != POT_OK) {
      if (ph.failures++ < 5)
        std::fprintf(stderr, "error: inclusion proof (%llu, %llu) does not verify: %s\n",
                     static_cast<unsigned long long>(incl[i].a),
                     static_cast<unsigned long long>(incl[i].b), pot_error_message(err));
      pot_error_free(err);
    }
    ph.incl_proof_hashes += static_cast<double>(incl_proofs[i].len / POT_DIGEST_SIZE);
  }
  for (size_t i = 0; i < cons.size(); ++i) {
    pot_error *err = nullptr;
    const auto t0 = Clock::now();
    const pot_status st =
        pot_merkle_verify_consistency(cons[i].a, cons[i].b, &cons_roots1[i], &cons_roots2[i],
                                      cons_proofs[i].data, cons_proofs[i].len, &err);
    ph.cons_verify.push_back(micros_since(t0));
    if (st != POT_OK) {
      if (ph.failures++ < 5)
        std::fprintf(stderr, "error: consistency proof (%llu, %llu) does not verify: %s\n",
                     static_cast<unsigned long long>(cons[i].a),
                     static_cast<unsigned long long>(cons[i].b), pot_error_message(err));
      pot_error_free(err);
    }
    ph.cons_proof_hashes += static_cast<double>(cons_proofs[i].len / POT_DIGEST_SIZE);
  }
  ph.incl_proof_hashes /= static_cast<double>(incl.size());
  ph.cons_proof_hashes /= static_cast<double>(cons.size());
  for (pot_bytes &b : incl_proofs) pot_bytes_free(&b);
  for (pot_bytes &b : cons_proofs) pot_bytes_free(&b);
  return ph;
}

// Prints one phase as a table and returns its JSON; `targets` says whether
// the 100 us targets apply (they do for the warm phase).
std::string report_phase(FILE *out, const Phase &ph, bool targets, bool *all_met) {
  std::fprintf(out, "  %-32s %9s %9s %9s %9s  %s\n", "operation (us per call)", "mean", "p50",
               "p99", "max", targets ? "target < 100 us" : "");
  Json j;
  j.str("phase", ph.name).integer("failures", ph.failures);
  auto row = [&](const char *label, const char *key, const std::vector<double> &v, bool target) {
    const Stats s = bench::summarize(v);
    std::string verdict;
    if (targets && target) {
      const bool met = s.p99 < kTargetMicros, mean_met = s.mean < kTargetMicros;
      verdict = met ? "met (p99)" : mean_met ? "mean met, p99 NOT" : "NOT met";
      if (!met) *all_met = false;
    }
    std::fprintf(out, "  %-32s %9.2f %9.2f %9.2f %9.2f  %s\n", label, s.mean, s.p50, s.p99, s.max,
                 verdict.c_str());
    j.stats(key, s);
  };
  row("pot_tree_inclusion_proof", "inclusion_proof_us", ph.incl_gen, true);
  row("pot_merkle_verify_inclusion", "verify_inclusion_us", ph.incl_verify, true);
  row("pot_tree_consistency_proof", "consistency_proof_us", ph.cons_gen, true);
  row("pot_merkle_verify_consistency", "verify_consistency_us", ph.cons_verify, true);
  row("pot_tree_root (any size)", "root_us", ph.root, false);
  std::fprintf(out,
               "  mean proof length: inclusion %.1f hashes, consistency %.1f hashes; %zu failed\n",
               ph.incl_proof_hashes, ph.cons_proof_hashes, ph.failures);
  j.num("mean_inclusion_hashes", ph.incl_proof_hashes)
      .num("mean_consistency_hashes", ph.cons_proof_hashes);
  return j.text();
}

}  // namespace

int main(int argc, char **argv) {
  const Options opt = parse_options(argc, argv);
  FILE *out = opt.json ? stderr : stdout;  // the human-readable report
  Json json;
  json.str("benchmark", "merkle").str("pot_version", pot_version_string());
  const std::string cpu = bench::cpu_model();
  const long ncpu = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::fprintf(out, "pot %s merkle benchmark\nmachine: %ld logical CPUs, %s\n",
               pot_version_string(), ncpu, cpu.c_str());
  json.raw("machine",
           Json().integer("logical_cpus", static_cast<uint64_t>(ncpu)).str("cpu", cpu).text());

  if (bench::file_size(opt.tree_path) >= 0) {
    std::fprintf(stderr, "error: %s exists; give --tree a path that does not\n",
                 opt.tree_path.c_str());
    return 1;
  }

  // Leaf records and hashes (not timed as part of any figure).
  auto t0 = Clock::now();
  const uint64_t n_leaves = std::max(opt.leaves, opt.log_leaves);
  const Leaves leaves = make_leaves(n_leaves, opt.seed);
  std::fprintf(out, "prepared %llu leaves of %zu bytes and their leaf hashes in %.2f s\n",
               static_cast<unsigned long long>(n_leaves), kRecordBytes, bench::seconds_since(t0));
  bool ok = true;

  // (a) Streaming log appends, one core.
  std::fprintf(out, "\n(a) streaming log, %llu leaves, 1 thread, 3 reps:\n",
               static_cast<unsigned long long>(opt.log_leaves));
  std::fprintf(out, "  %-44s %12s %12s %9s  %s\n", "operation", "best leaf/s", "med leaf/s",
               "ns/leaf", "target >= 1M/s");
  pot_digest log_root{};
  Json log_json;
  const bench::CpuSnapshot cpu_log = bench::cpu_snapshot();
  bool log_met = true;
  for (bool by_hash : {true, false}) {
    std::vector<double> secs;
    pot_digest root{};
    for (int rep = 0; rep < 3; ++rep) {
      const LogRun r = run_log(leaves, opt.log_leaves, by_hash);
      secs.push_back(r.seconds);
      root = r.root;
    }
    if (by_hash) log_root = root;
    if (!bench::same(root, log_root)) {
      std::fprintf(stderr, "error: pot_log_append and pot_log_append_hash give different roots\n");
      ok = false;
    }
    const Stats s = bench::summarize(secs);
    const double n = static_cast<double>(opt.log_leaves);
    const bool met = n / s.p50 >= kTargetLeavesPerSec;
    log_met = log_met && met;
    std::fprintf(out, "  %-44s %12.0f %12.0f %9.1f  %s\n",
                 by_hash ? "pot_log_append_hash (precomputed leaf hash)"
                         : "pot_log_append (64-byte leaf, hashes it)",
                 n / s.min, n / s.p50, 1e9 * s.p50 / n, met ? "met" : "NOT met");
    log_json.raw(by_hash ? "append_hash" : "append_64B", Json()
                                                             .num("best_leaves_per_s", n / s.min)
                                                             .num("median_leaves_per_s", n / s.p50)
                                                             .boolean("target_met", met)
                                                             .text());
  }
  const bench::CpuActivity log_activity = bench::cpu_activity(cpu_log, bench::cpu_snapshot());
  std::fprintf(out, "  root %s (identical for both)\n", bench::hex(log_root).c_str());
  std::fprintf(out, "  during these runs %s\n", bench::describe_activity(log_activity).c_str());
  log_json.raw("machine_activity", bench::activity_json(log_activity));
  json.raw("log",
           log_json.integer("leaves", opt.log_leaves).str("root", bench::hex(log_root)).text());

  // (b) Build the stored tree.
  std::fprintf(out, "\n(b) stored tree %s, %llu leaves:\n", opt.tree_path.c_str(),
               static_cast<unsigned long long>(opt.leaves));
  g_tree_path = opt.tree_path;
  std::atexit(remove_tree_file);
  const bench::CpuSnapshot cpu_tree = bench::cpu_snapshot();
  pot_tree *tree = nullptr;
  POT_CHECK(pot_tree_open, &tree, opt.tree_path.c_str());
  t0 = Clock::now();
  for (uint64_t i = 0; i < opt.leaves; ++i)
    POT_CHECK(pot_tree_append_hash, nullptr, tree, &leaves.hashes[i]);
  const double append_s = bench::seconds_since(t0);
  const auto t1 = Clock::now();
  POT_CHECK(pot_tree_flush, tree);
  const double flush_s = bench::seconds_since(t1);
  const double build_s = append_s + flush_s;
  const long long fsize = bench::file_size(opt.tree_path);
  std::fprintf(out, "  build: %.2f s (appends %.2f s + final flush %.3f s) = %.0f leaves/s\n",
               build_s, append_s, flush_s, static_cast<double>(opt.leaves) / build_s);
  std::fprintf(out, "  file size: %lld bytes (%.1f MiB, %.1f bytes/leaf)\n", fsize,
               static_cast<double>(fsize) / 1048576.0,
               static_cast<double>(fsize) / static_cast<double>(opt.leaves));
  pot_digest tree_root{};
  POT_CHECK(pot_tree_root, &tree_root, tree, opt.leaves);
  if (opt.log_leaves <= opt.leaves) {
    pot_digest prefix{};
    POT_CHECK(pot_tree_root, &prefix, tree, opt.log_leaves);
    if (!bench::same(prefix, log_root)) {
      std::fprintf(stderr, "error: tree root at size %llu differs from the log root\n",
                   static_cast<unsigned long long>(opt.log_leaves));
      ok = false;
    }
  }
  std::fprintf(out, "  root %s\n", bench::hex(tree_root).c_str());
  json.raw("tree_build", Json()
                             .integer("leaves", opt.leaves)
                             .num("seconds", build_s)
                             .num("append_seconds", append_s)
                             .num("flush_seconds", flush_s)
                             .num("leaves_per_s", static_cast<double>(opt.leaves) / build_s)
                             .integer("file_bytes", fsize > 0 ? static_cast<uint64_t>(fsize) : 0)
                             .str("root", bench::hex(tree_root))
                             .text());

  // Random pairs, the same for every phase.
  bench::SplitMix64 rng(opt.seed ^ 0x5eedULL);
  std::vector<Pair> incl(opt.pairs), cons(opt.pairs);
  for (Pair &p : incl) {
    p.b = rng.uniform(1, opt.leaves);
    p.a = rng.uniform(0, p.b - 1);
  }
  for (Pair &p : cons) {
    const uint64_t x = rng.uniform(1, opt.leaves), y = rng.uniform(1, opt.leaves);
    p = Pair{std::min(x, y), std::max(x, y)};
  }

  // Warm: the handle that built the tree; the file is in the page cache.
  const double warm_resident = bench::resident_fraction(opt.tree_path);
  std::fprintf(out,
               "\n  proofs over %llu random pairs each, same handle, page cache warm "
               "(%.1f%% of the file resident):\n",
               static_cast<unsigned long long>(opt.pairs), 100 * warm_resident);
  const Phase warm = measure("warm", tree, leaves, incl, cons, "");
  bool proofs_met = true;
  std::vector<std::string> phases;
  phases.push_back(report_phase(out, warm, true, &proofs_met));
  if (warm.failures) ok = false;
  const bench::CpuActivity tree_activity = bench::cpu_activity(cpu_tree, bench::cpu_snapshot());
  std::fprintf(out, "  during (b) %s\n", bench::describe_activity(tree_activity).c_str());
  json.raw("tree_machine_activity", bench::activity_json(tree_activity));
  pot_tree_free(tree);
  tree = nullptr;

  // (c) Reopen the file with its pages dropped from the page cache.
  if (opt.cold) {
    const bench::CpuSnapshot cpu_cold = bench::cpu_snapshot();
    const bool dropped = bench::drop_file_cache(opt.tree_path);
    const double resident = bench::resident_fraction(opt.tree_path);
    t0 = Clock::now();
    POT_CHECK(pot_tree_open, &tree, opt.tree_path.c_str());
    const double open_ms = 1e3 * bench::seconds_since(t0);
    std::fprintf(out,
                 "\n(c) reopened with pot_tree_open in %.3f ms; %.1f%% of the file resident "
                 "before%s;\n    same pairs, pages dropped again before each generation loop:\n",
                 open_ms, 100 * resident, dropped ? " (pages dropped)" : " (drop FAILED)");
    if (pot_tree_size(tree) != opt.leaves) {
      std::fprintf(stderr, "error: the reopened tree has %llu leaves\n",
                   static_cast<unsigned long long>(pot_tree_size(tree)));
      ok = false;
    }
    pot_digest root{};
    POT_CHECK(pot_tree_root, &root, tree, opt.leaves);
    if (!bench::same(root, tree_root)) {
      std::fprintf(stderr, "error: the reopened tree has another root\n");
      ok = false;
    }
    const Phase cold = measure("reopened_cold", tree, leaves, incl, cons, opt.tree_path);
    bool unused = true;
    Json cj;
    cj.num("open_ms", open_ms).num("resident_fraction_before", resident);
    phases.push_back(report_phase(out, cold, false, &unused));
    if (cold.failures) ok = false;
    std::fprintf(out, "  (%.1f%% of the file resident afterwards)\n",
                 100 * bench::resident_fraction(opt.tree_path));
    const bench::CpuActivity cold_activity = bench::cpu_activity(cpu_cold, bench::cpu_snapshot());
    std::fprintf(out, "  during (c) %s\n", bench::describe_activity(cold_activity).c_str());
    cj.raw("machine_activity", bench::activity_json(cold_activity));
    json.raw("reopen", cj.text());
    pot_tree_free(tree);
  }
  json.raw("proof_phases", bench::json_array(phases))
      .raw("targets", Json()
                          .num("log_min_leaves_per_s", kTargetLeavesPerSec)
                          .num("proof_max_us", kTargetMicros)
                          .boolean("log_met", log_met)
                          .boolean("proofs_met_p99", proofs_met)
                          .text())
      .boolean("all_checks_passed", ok);

  remove_tree_file();
  g_tree_path.clear();
  std::fprintf(out, "\ntargets: log appends %s; proofs (p99 < 100 us, warm) %s; checks %s\n",
               log_met ? "met" : "NOT met", proofs_met ? "met" : "NOT met",
               ok ? "passed" : "FAILED");
  if (opt.json) std::printf("%s\n", json.text().c_str());
  return ok ? 0 : 3;
}
