// The concurrency contract of docs/concurrency.md, exercised: every `shared`
// function on one handle from several threads at once, `any` functions from
// several threads, `exclusive` functions on distinct handles per thread, and
// one file written by several threads at once. scripts/test runs these
// (`*Concurrent*`) under ThreadSanitizer; elsewhere they check the results.
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pot.h"
#include "test_util.h"

namespace {

using Bytes = std::vector<uint8_t>;
using Read = std::function<std::string()>;  // a call, its outputs as bytes

constexpr int kThreads = 4;
constexpr int kRounds = 8;

std::string str(const void *p, size_t n) { return std::string(static_cast<const char *>(p), n); }
std::string str(const pot_digest &d) { return str(d.bytes, sizeof d.bytes); }
std::string take(pot_bytes &b) {
  std::string s = str(b.data, b.len);
  pot_bytes_free(&b);
  return s;
}
// status(call) << outputs: `<<` is evaluated left to right (C++17), so the
// outputs are read after the call wrote them (`+` has no such order).
struct Seq {
  std::string s;
  operator std::string() const { return s; }  // NOLINT: implicit by design
};
Seq status(pot_status s) { return {pot_status_name(s)}; }
Seq operator<<(Seq a, const std::string &b) {
  a.s += b;
  return a;
}
Seq operator<<(Seq a, const Seq &b) {
  a.s += b.s;
  return a;
}
std::string operator+(const std::string &a, const Seq &b) { return a + b.s; }

// Runs every read on kThreads threads at once, kRounds times each, and
// counts results that differ from a single-threaded run.
int run_concurrently(const std::vector<Read> &reads) {
  std::vector<std::string> want;
  for (const auto &r : reads) want.push_back(r());
  std::atomic<int> mismatches{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round)
        for (size_t i = 0; i < reads.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(t) * 7) % reads.size();  // threads in different orders
          if (reads[k]() != want[k] && mismatches++ == 0) ADD_FAILURE() << "read " << k << " differs";
        }
    });
  go = true;
  for (auto &th : threads) th.join();
  return mismatches.load();
}

pot_digest filled(uint8_t v) {
  pot_digest d{};
  std::memset(d.bytes, v, sizeof d.bytes);
  return d;
}

TEST(CApiConcurrent, SharedCallsOnOneHandleFromManyThreads) {
  pot::test::TempDir dir;
  std::vector<Read> reads;

  // pot_state
  pot_state *state = nullptr;
  ASSERT_EQ(pot_state_new(&state, nullptr), POT_OK);
  const Bytes w = pot::test::pseudo_random_bytes(200000, 1);
  const uint64_t wshape[1] = {50000};
  ASSERT_EQ(pot_state_add_tensor(state, "w", POT_DTYPE_F32, wshape, 1, w.data(), w.size(), nullptr), POT_OK);
  ASSERT_EQ(pot_state_add_tensor(state, "b", POT_DTYPE_U8, wshape, 1, w.data(), 50000, nullptr), POT_OK);
  ASSERT_EQ(pot_state_set_threads(state, 2, nullptr), POT_OK);
  reads.push_back([&]() -> std::string { return std::to_string(pot_state_tensor_count(state)); });
  reads.push_back([&]() -> std::string {
    pot_digest d{};
    return status(pot_state_digest(&d, state, nullptr)) << str(d);
  });
  reads.push_back([&]() -> std::string {
    pot_bytes p{};
    return status(pot_state_tensor_proof(&p, state, "b", nullptr)) << take(p);
  });

  // pot_safetensors_writer, then pot_safetensors
  pot_safetensors_writer *writer = nullptr;
  ASSERT_EQ(pot_safetensors_writer_new(&writer, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(writer, "param/w", POT_DTYPE_F32, wshape, 1, w.data(), w.size(), nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_set_metadata(writer, "k", "v", nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_write(writer, dir.file("s").c_str(), nullptr), POT_OK);
  pot_safetensors *file = nullptr, *other = nullptr;
  ASSERT_EQ(pot_safetensors_open(&file, dir.file("s").c_str(), nullptr), POT_OK);
  {
    pot_safetensors_writer *w2 = nullptr;
    ASSERT_EQ(pot_safetensors_writer_new(&w2, nullptr), POT_OK);
    const Bytes v = pot::test::pseudo_random_bytes(200000, 2);
    ASSERT_EQ(pot_safetensors_writer_add(w2, "param/w", POT_DTYPE_F32, wshape, 1, v.data(), v.size(), nullptr), POT_OK);
    ASSERT_EQ(pot_safetensors_writer_write(w2, dir.file("t").c_str(), nullptr), POT_OK);
    pot_safetensors_writer_free(w2);
    ASSERT_EQ(pot_safetensors_open(&other, dir.file("t").c_str(), nullptr), POT_OK);
  }
  reads.push_back([&]() -> std::string { return std::to_string(pot_safetensors_count(file)); });
  reads.push_back([&]() -> std::string {
    const char *name = "";
    pot_dtype dt;
    const uint64_t *shape;
    size_t ndim, nbytes;
    const void *data;
    const pot_status s = pot_safetensors_tensor(&name, &dt, &shape, &ndim, &data, &nbytes, file, 0, nullptr);
    return status(s) << name << std::to_string(nbytes) << str(data, 64);
  });
  reads.push_back([&]() -> std::string {
    size_t i = 9;
    return status(pot_safetensors_find(&i, file, "param/w", nullptr)) << std::to_string(i);
  });
  reads.push_back([&]() -> std::string {
    const char *v = nullptr;
    const pot_status st = pot_safetensors_metadata(&v, file, "k", nullptr);
    return status(st) << (v != nullptr ? v : "(null)");
  });
  reads.push_back([&]() -> std::string {
    pot_digest d{};
    return status(pot_safetensors_digest(&d, file, 2, nullptr)) << str(d);
  });
  reads.push_back([&]() -> std::string {
    double n = 0;
    return status(pot_update_norm(&n, file, other, "param/", nullptr)) << str(&n, sizeof n);
  });
  reads.push_back([&]() -> std::string {
    pot_bytes a{}, b{}, flags{};
    const std::string sa = status(pot_safetensors_stats(&a, file, 2, nullptr)) << str(a.data, a.len);
    const std::string sb = status(pot_safetensors_stats(&b, other, 1, nullptr)) << str(b.data, b.len);
    const std::string sf = status(pot_state_flags(&flags, a.data, a.len, b.data, b.len, nullptr)) << take(flags);
    pot_bytes_free(&a);
    pot_bytes_free(&b);
    return sa + sb + sf;
  });
  // The writer is read by writing distinct files from every thread.
  std::atomic<int> file_no{0};
  reads.push_back([&]() -> std::string {
    const std::string path = dir.file(fmt::format("w{}", file_no++));
    pot_digest d{};
    if (pot_safetensors_writer_write(writer, path.c_str(), nullptr) != POT_OK) return std::string("write failed");
    const pot_status s = pot_safetensors_digest_file(&d, path.c_str(), 1, nullptr);
    std::filesystem::remove(path);
    return status(s) << str(d);
  });

  // pot_log and pot_tree
  pot_log *log = nullptr;
  ASSERT_EQ(pot_log_new(&log, nullptr), POT_OK);
  pot_tree *tree = nullptr;
  ASSERT_EQ(pot_tree_open(&tree, dir.file("tree").c_str(), nullptr), POT_OK);
  for (uint32_t i = 0; i < 300; ++i) {
    ASSERT_EQ(pot_log_append(log, &i, sizeof i, nullptr), POT_OK);
    ASSERT_EQ(pot_tree_append(nullptr, tree, &i, sizeof i, nullptr), POT_OK);
  }
  ASSERT_EQ(pot_tree_flush(tree, nullptr), POT_OK);
  reads.push_back([&]() -> std::string { return std::to_string(pot_log_size(log)); });
  reads.push_back([&]() -> std::string {
    pot_digest d{};
    return status(pot_log_root(&d, log, nullptr)) << str(d);
  });
  reads.push_back([&]() -> std::string {
    pot_bytes b{};
    return status(pot_log_save(&b, log, nullptr)) << take(b);
  });
  reads.push_back([&]() -> std::string { return std::to_string(pot_tree_size(tree)); });
  for (uint64_t i : {0u, 77u, 299u}) {
    reads.push_back([&, i]() -> std::string {
      pot_digest r{}, l{};
      pot_bytes p{}, c{};
      std::string s = status(pot_tree_root(&r, tree, i << 1, nullptr)) << str(r);
      s += status(pot_tree_leaf_hash(&l, tree, i, nullptr)) << str(l);
      s += status(pot_tree_inclusion_proof(&p, tree, i, 300, nullptr)) << take(p);
      s += status(pot_tree_consistency_proof(&c, tree, i << 1, 300, nullptr)) << take(c);
      return s;
    });
  }

  // pot_spec, pot_commitment, pot_opening
  const auto protocol = pot::test::load_vectors("protocol.json");
  const Bytes spec_bytes = pot::test::unhex(protocol["specs"][0]["canonical"]);
  const Bytes commit_bytes = pot::test::unhex(protocol["commitments"][0]["canonical"]);
  pot_spec *spec = nullptr;
  pot_commitment *commitment = nullptr;
  ASSERT_EQ(pot_spec_decode(&spec, spec_bytes.data(), spec_bytes.size(), nullptr), POT_OK);
  ASSERT_EQ(pot_commitment_decode(&commitment, commit_bytes.data(), commit_bytes.size(), nullptr), POT_OK);
  reads.push_back([&]() -> std::string {
    pot_bytes a{}, b{};
    pot_digest d{};
    pot_seed_policy p;
    uint64_t seed;
    std::string s = status(pot_spec_encode(&a, spec, nullptr)) << take(a);
    s += status(pot_spec_to_json(&b, spec, nullptr)) << take(b);
    s += status(pot_spec_digest(&d, spec, nullptr)) << str(d);
    s += status(pot_spec_seed_policy(&p, &seed, spec, nullptr)) << std::to_string(p) << std::to_string(seed);
    return s + std::to_string(pot_spec_intra_op_threads(spec)) + std::to_string(pot_spec_norm_bucket_resolution(spec));
  });
  reads.push_back([&]() -> std::string {
    pot_bytes a{}, b{};
    pot_digest r{}, d1{}, d2{}, d3{}, d4{};
    std::string s = status(pot_commitment_encode(&a, commitment, nullptr)) << take(a);
    s += status(pot_commitment_to_json(&b, commitment, nullptr)) << take(b);
    s += status(pot_commitment_run_id(&r, commitment, nullptr)) << str(r);
    s += status(pot_commitment_digests(&d1, &d2, &d3, &d4, commitment, nullptr)) << str(d1) << str(d2) << str(d3) << str(d4);
    return s + std::to_string(pot_commitment_declared_steps(commitment)) +
           std::to_string(pot_commitment_dataset_size(commitment));
  });
  pot_opening *opening = nullptr;
  const pot_digest run = filled(1), pre = filled(2);
  ASSERT_EQ(pot_opening_new(&opening, &run, 1, 4, &pre, nullptr), POT_OK);
  const Bytes leaf = pot::test::unhex(protocol["step_leaves"][0]["leaf"]), proof(64, 3);
  ASSERT_EQ(pot_opening_set_post_leaf(opening, leaf.data(), leaf.size(), proof.data(), proof.size(), nullptr), POT_OK);
  reads.push_back([&]() -> std::string {
    pot_bytes a{};
    pot_digest d{};
    return status(pot_opening_encode(&a, opening, nullptr)) << take(a) <<
           status(pot_opening_digest(&d, opening, nullptr)) << str(d);
  });
  reads.push_back([&]() -> std::string {
    pot_bytes a{};
    if (pot_opening_encode(&a, opening, nullptr) != POT_OK) return std::string("encode failed");
    pot_opening_check check;
    const pot_digest root = filled(4);
    const pot_status s = pot_opening_verify(&check, commitment, 1, 4, &root, a.data, a.len, nullptr, nullptr, 1, nullptr);
    pot_bytes_free(&a);
    return status(s) << std::to_string(check);
  });

  // pot_verdict (reason after a decision), pot_ledger (save), loss checks
  pot_verdict *verdict = nullptr;
  ASSERT_EQ(pot_verdict_new(&verdict, POT_WITNESS_BITWISE, 2, nullptr), POT_OK);
  const pot_digest st = filled(5);
  for (const char *who : {"a", "b"})
    ASSERT_EQ(pot_verdict_add_reveal(verdict, reinterpret_cast<const uint8_t *>(who), 1, &st, 0, nullptr), POT_OK);
  pot_verdict_outcome outcome;
  size_t cluster;
  ASSERT_EQ(pot_verdict_decide(&outcome, &cluster, verdict, &st, nullptr, nullptr), POT_OK);
  reads.push_back([&]() -> std::string { return std::string(pot_verdict_reason(verdict)); });
  pot_ledger *ledger = nullptr;
  ASSERT_EQ(pot_ledger_new(&ledger, pot::test::kLedgerConfigJson, nullptr), POT_OK);
  reads.push_back([&]() -> std::string {
    pot_bytes b{};
    return status(pot_ledger_save(&b, ledger, nullptr)) << take(b);
  });
  pot_losscheck_params *params = nullptr;
  ASSERT_EQ(pot_losscheck_params_new(&params, nullptr), POT_OK);
  std::vector<double> losses(300);
  for (size_t i = 0; i < losses.size(); ++i) losses[i] = 5.0 / (1.0 + 0.01 * static_cast<double>(i));
  losses[100] = losses[101] = losses[102] = losses[103] = losses[104] = losses[105] = 2.0;
  pot_losscheck_report *report = nullptr;
  ASSERT_EQ(pot_losscheck_run(&report, losses.data(), losses.size(), params, nullptr), POT_OK);
  reads.push_back([&]() -> std::string {
    double v = 0;
    return status(pot_losscheck_params_get(&v, params, static_cast<pot_losscheck_param>(0), nullptr)) <<
           str(&v, sizeof v);
  });
  reads.push_back([&]() -> std::string {
    pot_losscheck_report *r = nullptr;  // `any` on a shared params handle
    const pot_status s = pot_losscheck_run(&r, losses.data(), losses.size(), params, nullptr);
    const std::string n = std::to_string(pot_losscheck_report_count(r));
    pot_losscheck_report_free(r);
    return status(s) << n;
  });
  reads.push_back([&]() -> std::string {
    std::string s = std::to_string(pot_losscheck_report_count(report));
    for (size_t i = 0; i < pot_losscheck_report_count(report); ++i) {
      pot_loss_flag_kind k;
      uint64_t first, last;
      const char *msg = "";
      s += status(pot_losscheck_report_flag(&k, &first, &last, &msg, report, i, nullptr)) << std::to_string(k) <<
           std::to_string(first) + msg;
    }
    return s;
  });

  // pot_tensor_assembler: finish is a read.
  pot_tensor_assembler *assembler = nullptr;
  const uint64_t ashape[1] = {4};
  ASSERT_EQ(pot_tensor_assembler_new(&assembler, "a", POT_DTYPE_U8, ashape, 1, nullptr), POT_OK);
  pot_bytes record{};
  const uint8_t four[4] = {1, 2, 3, 4};
  ASSERT_EQ(pot_chunk_range_hash(&record, four, 4, 0, 4, 1, nullptr), POT_OK);
  ASSERT_EQ(pot_tensor_assembler_add(assembler, record.data, record.len, nullptr), POT_OK);
  pot_bytes_free(&record);
  reads.push_back([&]() -> std::string {
    pot_digest d{};
    return status(pot_tensor_assembler_finish(&d, assembler, nullptr)) << str(d);
  });

  EXPECT_EQ(run_concurrently(reads), 0);

  pot_tensor_assembler_free(assembler);
  pot_losscheck_report_free(report);
  pot_losscheck_params_free(params);
  pot_ledger_free(ledger);
  pot_verdict_free(verdict);
  pot_opening_free(opening);
  pot_commitment_free(commitment);
  pot_spec_free(spec);
  pot_tree_free(tree);
  pot_log_free(log);
  pot_safetensors_free(other);
  pot_safetensors_free(file);
  pot_safetensors_writer_free(writer);
  pot_state_free(state);
}

TEST(CApiConcurrent, HandleFreeFunctionsFromManyThreads) {
  const auto protocol = pot::test::load_vectors("protocol.json");
  const Bytes data = pot::test::pseudo_random_bytes(300000, 3);
  const Bytes spec_bytes = pot::test::unhex(protocol["specs"][0]["canonical"]);
  const pot_digest a = filled(1), b = filled(2);
  const Bytes salt(16, 9), id = {'v', '1'}, beacon(8, 7);
  std::vector<Read> reads = {
      [&]() -> std::string {
        pot_digest d{};
        return status(pot_sha256(&d, data.data(), data.size(), nullptr)) << str(d);
      },
      [&]() -> std::string {
        pot_digest d{};
        const uint64_t shape[1] = {75000};
        return status(pot_tensor_digest(&d, "t", POT_DTYPE_F32, shape, 1, data.data(), data.size(), 2, nullptr)) <<
               str(d);
      },
      [&]() -> std::string {
        pot_digest l{}, n{};
        pot_merkle_leaf_hash(&l, data.data(), 100, nullptr);
        pot_merkle_node_hash(&n, &l, &a, nullptr);
        const pot_status st = pot_merkle_verify_inclusion(0, 1, &l, nullptr, 0, &l, nullptr);
        return str(l) + str(n) + pot_status_name(st);
      },
      [&]() -> std::string {
        uint64_t s = 0, steps[16];
        std::string r = status(pot_seed_derive(&s, 7, &a, 123, nullptr)) << std::to_string(s);
        r += status(pot_challenge_derive(steps, 16, beacon.data(), beacon.size(), &a, 100000, nullptr));
        return r + str(steps, sizeof steps);
      },
      [&]() -> std::string {
        uint8_t leaf[POT_STEP_LEAF_SIZE];
        double p = 0;
        std::string r = status(pot_step_leaf_encode(leaf, &a, 9, &b, &a, 1.25, 0.5, nullptr)) << str(leaf, sizeof leaf);
        return r + (status(pot_security_detection_probability(&p, 1000, 10, 50, nullptr)) << str(&p, sizeof p));
      },
      [&]() -> std::string {
        pot_bytes e{};
        return status(pot_seeded_schedule_entry(&e, 3, 1000, 8, 2, 77, nullptr)) << take(e);
      },
      [&]() -> std::string {
        pot_digest c{};
        const std::string st = pot::test::replayed_statement_json(pot::test::hex(a.bytes, 32), 5, 2, pot::test::hex(b.bytes, 32), -3);
        std::string r =
            status(pot_witness_commitment(&c, st.c_str(), salt.data(), salt.size(), id.data(), id.size(), nullptr));
        return r + str(c) +
               status(pot_witness_verify_reveal(&c, st.c_str(), salt.data(), salt.size(), id.data(), id.size(), nullptr));
      },
      [&]() -> std::string {
        int64_t k = 0;
        return status(pot_norm_bucket(&k, 0.037, 16, nullptr)) << std::to_string(k);
      },
      [&]() -> std::string {
        // Decoders make handles of their own.
        pot_spec *s = nullptr;
        pot_digest d{};
        std::string r = status(pot_spec_decode(&s, spec_bytes.data(), spec_bytes.size(), nullptr));
        if (s != nullptr) pot_spec_digest(&d, s, nullptr);
        pot_spec_free(s);
        return r + str(d);
      },
  };
  EXPECT_EQ(run_concurrently(reads), 0);
}

// `exclusive` calls on distinct handles: every thread drives its own ledger
// through the recorded transcript and must end in the recorded state.
TEST(CApiConcurrent, ExclusiveCallsOnDistinctHandles) {
  const auto t = pot::test::load_vectors("ledger_transcript.json");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  std::vector<std::string> finals(kThreads);
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      pot_ledger *l = nullptr;
      const auto &c = t["config"];
      if (pot_ledger_new(&l, c.dump().c_str(), nullptr) != POT_OK) {
        ++failures;
        return;
      }
      for (auto call : t["calls"]) {
        const std::string expect = call["expect"];
        call.erase("expect");
        call.erase("result");
        pot_bytes out{};
        const pot_status s = pot_ledger_apply(&out, l, call.dump().c_str(), nullptr);
        pot_bytes_free(&out);
        if ((s == POT_OK) != (expect == "ok")) ++failures;
      }
      pot_bytes saved{};
      if (pot_ledger_save(&saved, l, nullptr) != POT_OK) ++failures;
      pot_digest d{};
      pot_sha256(&d, saved.data, saved.len, nullptr);
      pot_bytes_free(&saved);
      finals[static_cast<size_t>(i)] = pot::test::hex(d.bytes, sizeof d.bytes);
      pot_ledger_free(l);
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (const auto &f : finals) EXPECT_EQ(f, t["state_sha256"].get<std::string>());
}

// Several threads writing one path at once: every write is atomic, the file
// is always whole, and no temporary file is left behind.
TEST(CApiConcurrent, OnePathWrittenByManyThreads) {
  pot::test::TempDir dir;
  const std::string path = dir.file("state.safetensors");
  std::vector<pot_safetensors_writer *> writers(kThreads);
  std::vector<std::string> digests(kThreads);
  const uint64_t shape[1] = {25000};
  std::vector<Bytes> data;  // the writers reference their data until written
  for (int i = 0; i < kThreads; ++i) data.push_back(pot::test::pseudo_random_bytes(100000, 10 + static_cast<uint64_t>(i)));
  for (int i = 0; i < kThreads; ++i) {
    const Bytes &v = data[static_cast<size_t>(i)];
    ASSERT_EQ(pot_safetensors_writer_new(&writers[static_cast<size_t>(i)], nullptr), POT_OK);
    ASSERT_EQ(pot_safetensors_writer_add(writers[static_cast<size_t>(i)], "w", POT_DTYPE_F32, shape, 1, v.data(),
                                         v.size(), nullptr),
              POT_OK);
    pot_digest d{};
    ASSERT_EQ(pot_tensor_digest(&d, "w", POT_DTYPE_F32, shape, 1, v.data(), v.size(), 1, nullptr), POT_OK);
    pot_state *s = nullptr;
    ASSERT_EQ(pot_state_new(&s, nullptr), POT_OK);
    ASSERT_EQ(pot_state_add_tensor(s, "w", POT_DTYPE_F32, shape, 1, v.data(), v.size(), nullptr), POT_OK);
    ASSERT_EQ(pot_state_digest(&d, s, nullptr), POT_OK);
    pot_state_free(s);
    digests[static_cast<size_t>(i)] = str(d);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 10; ++round) {
        pot_error *err = nullptr;
        if (pot_safetensors_writer_write(writers[static_cast<size_t>(i)], path.c_str(), &err) != POT_OK) {
          if (failures++ == 0) ADD_FAILURE() << pot_error_message(err);
          pot_error_free(err);
        }
        // Whatever is at the path now is one whole write.
        pot_digest d{};
        if (pot_safetensors_digest_file(&d, path.c_str(), 1, nullptr) != POT_OK ||
            std::find(digests.begin(), digests.end(), str(d)) == digests.end())
          ++failures;
      }
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto *w : writers) pot_safetensors_writer_free(w);
  for (const auto &e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "state.safetensors") << "left behind: " << e.path();
}

}  // namespace
