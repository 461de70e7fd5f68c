// Hostile inputs through the public C API (docs/security.md section 2.1):
// every case must end in its documented status with a message, quickly,
// without allocating more than the documented bound
//     kPerInputByte * (bytes of untrusted input) + kConstant
// (measured by counting operator new, alloc_meter.cpp), and without a crash,
// a hang or a leak (the ASan build runs this program too).
//
// The cases follow issue 8's list: huge claimed sizes, empty inputs,
// truncated inputs and files, NaN/Inf tensors, duplicate names, non-canonical
// encodings, replayed reveals, reveals and challenges for unknown or sealed
// runs, and integer overflow in step counts.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "alloc_meter.h"
#include "pot.h"
#include "test_util.h"

namespace {

using Bytes = std::vector<uint8_t>;
using nlohmann::json;
namespace meter = pot::test::meter;

// The documented allocation bound (docs/security.md section 2.1).
constexpr size_t kPerInputByte = 64;
constexpr size_t kConstant = size_t{1} << 20;
// A guard against hangs, not a performance target (the ASan build is slow).
constexpr double kMaxSeconds = 5.0;

struct Call {
  pot_status status = POT_OK;
  std::string message;
  size_t peak = 0;  // bytes allocated at the peak of the call, above the start
  double seconds = 0;
};

Call measure(const std::function<pot_status(pot_error **)> &f) {
  pot_error *err = nullptr;
  meter::reset_peak();
  const size_t base = meter::current();
  const auto t0 = std::chrono::steady_clock::now();
  Call c;
  c.status = f(&err);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.peak = meter::peak() - base;
  if (err != nullptr) c.message = pot_error_message(err);
  pot_error_free(err);
  return c;
}

// The call fails with `want` and a message, fast, within the bound for
// `input` bytes of untrusted input.
// The largest allocation seen in a refused call, printed at the end
// (docs/security.md quotes it).
struct Worst {
  size_t peak = 0, input = 0;
  std::string what;
} g_worst;

class PrintWorst : public ::testing::Environment {
  void TearDown() override {
    std::printf("largest allocation of a refused call: %zu bytes, for %zu bytes of input (%s)\n", g_worst.peak,
                g_worst.input, g_worst.what.c_str());
  }
};
const auto *const g_env = ::testing::AddGlobalTestEnvironment(new PrintWorst);

void expect_refused(const char *what, pot_status want, size_t input,
                    const std::function<pot_status(pot_error **)> &f) {
  const Call c = measure(f);
  if (c.peak > g_worst.peak) g_worst = {c.peak, input, what};
  if (std::getenv("POT_HOSTILE_VERBOSE") != nullptr)
    std::printf("%-60s %10zu bytes in %10zu bytes allocated %8.4f s\n", what, input, c.peak, c.seconds);
  EXPECT_EQ(pot_status_name(c.status), std::string(pot_status_name(want))) << what << ": " << c.message;
  EXPECT_FALSE(c.message.empty()) << what;
  EXPECT_LE(c.peak, kPerInputByte * input + kConstant) << what << ": " << input << " bytes of input";
  EXPECT_LT(c.seconds, kMaxSeconds) << what;
}

void expect_ok(const char *what, const std::function<pot_status(pot_error **)> &f) {
  const Call c = measure(f);
  EXPECT_EQ(c.status, POT_OK) << what << ": " << c.message;
  EXPECT_LT(c.seconds, kMaxSeconds) << what;
}

Bytes unhex(const std::string &h) { return pot::test::unhex(h); }

void put_u64le(Bytes &b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u32le(Bytes &b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_varint(Bytes &b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}

// safetensors bytes: u64le(declared header length) || header || data.
Bytes safetensors(const std::string &header, size_t data, uint64_t declared = UINT64_MAX) {
  Bytes b;
  put_u64le(b, declared == UINT64_MAX ? header.size() : declared);
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + data, 0);
  return b;
}

void write_file(const std::string &path, const Bytes &b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
}

pot_digest filled(uint8_t v) {
  pot_digest d;
  std::memset(d.bytes, v, sizeof d.bytes);
  return d;
}

const json &protocol() {
  static const json j = pot::test::load_vectors("protocol.json");
  return j;
}

Bytes vector_spec() { return unhex(protocol()["specs"][0]["canonical"].get<std::string>()); }
Bytes vector_commitment() { return unhex(protocol()["commitments"][0]["canonical"].get<std::string>()); }
Bytes vector_task() { return unhex(protocol()["tasks"][0]["canonical"].get<std::string>()); }

// The vector commitment, decoded: what pot_opening_verify checks manifests against.
using Commitment = std::unique_ptr<pot_commitment, decltype(&pot_commitment_free)>;
Commitment decoded_commitment() {
  const Bytes b = vector_commitment();
  pot_commitment *c = nullptr;
  EXPECT_EQ(pot_commitment_decode(&c, b.data(), b.size(), nullptr), POT_OK);
  return Commitment(c, pot_commitment_free);
}
Bytes vector_entry() { return unhex(protocol()["schedule_entries"][0]["entry"].get<std::string>()); }
Bytes vector_leaf() { return unhex(protocol()["step_leaves"][1]["leaf"].get<std::string>()); }

// A manifest with every field set (two samples, state references).
Bytes valid_manifest(const pot_digest &run = filled(1), uint64_t step = 2, uint64_t log_size = 8) {
  pot_error *err = nullptr;
  pot_opening *o = nullptr;
  const pot_digest pre = filled(2);
  EXPECT_EQ(pot_opening_new(&o, &run, step, log_size, &pre, &err), POT_OK);
  const Bytes leaf = vector_leaf(), proof(3 * 32, 7), entry = vector_entry();
  const Bytes sample = safetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(pot_opening_set_pre_leaf(o, leaf.data(), leaf.size(), proof.data(), proof.size(), &err), POT_OK);
  EXPECT_EQ(pot_opening_set_post_leaf(o, leaf.data(), leaf.size(), proof.data(), proof.size(), &err), POT_OK);
  EXPECT_EQ(pot_opening_set_schedule(o, entry.data(), entry.size(), proof.data(), proof.size(), &err), POT_OK);
  for (uint64_t i : {2, 3})
    EXPECT_EQ(pot_opening_add_sample(o, i, sample.data(), sample.size(), proof.data(), proof.size(), &err), POT_OK);
  EXPECT_EQ(pot_opening_set_state_refs(o, "pre.safetensors", "post.safetensors", &err), POT_OK);
  pot_bytes out{};
  EXPECT_EQ(pot_opening_encode(&out, o, &err), POT_OK);
  Bytes b(out.data, out.data + out.len);
  pot_bytes_free(&out);
  pot_opening_free(o);
  return b;
}

// Decoders of bytes, each as a call taking (data, len).
struct Decoder {
  const char *name;
  std::function<pot_status(const uint8_t *, size_t, pot_error **)> run;
};

// A decoder that makes a handle, freed at once.
template <typename H>
std::function<pot_status(const uint8_t *, size_t, pot_error **)> owning(
    pot_status (*decode)(H **, const uint8_t *, size_t, pot_error **), void (*release)(H *)) {
  return [=](const uint8_t *p, size_t n, pot_error **e) {
    H *h = nullptr;
    const pot_status st = decode(&h, p, n, e);
    release(h);
    return st;
  };
}

std::vector<Decoder> decoders() {
  return {
      {"pot_spec_decode", owning(pot_spec_decode, pot_spec_free)},
      {"pot_commitment_decode", owning(pot_commitment_decode, pot_commitment_free)},
      {"pot_task_decode", owning(pot_task_decode, pot_task_free)},
      {"pot_schedule_entry_decode",
       [](const uint8_t *p, size_t n, pot_error **e) {
         uint64_t step = 0, indices[64];
         uint32_t sizes[64];
         size_t count = 64, micro = 64;
         return pot_schedule_entry_decode(&step, indices, &count, sizes, &micro, p, n, e);
       }},
      {"pot_step_leaf_decode",
       [](const uint8_t *p, size_t n, pot_error **e) {
         uint64_t step = 0;
         pot_digest run, d, stats;
         double loss = 0, norm = 0;
         return pot_step_leaf_decode(&run, &step, &d, &stats, &loss, &norm, p, n, e);
       }},
      {"pot_log_load", owning(pot_log_load, pot_log_free)},
      {"pot_ledger_load", owning(pot_ledger_load, pot_ledger_free)},
      {"pot_sample_digest",
       [](const uint8_t *p, size_t n, pot_error **e) {
         pot_digest d;
         return pot_sample_digest(&d, p, n, e);
       }},
  };
}

const Decoder &decoder(const std::string &name) {
  static const std::vector<Decoder> all = decoders();
  for (const auto &d : all)
    if (name == d.name) return d;
  throw std::invalid_argument("no decoder " + name);
}

// ---------------------------------------------------------------------------
// Huge claimed sizes: refused from the claim, before any allocation for it.

TEST(HugeClaims, SafetensorsBytes) {
  struct Case {
    const char *what;
    Bytes bytes;
    pot_status want;
  } cases[] = {
      {"header length 2^62", safetensors("{}", 0, uint64_t{1} << 62), POT_E_LIMIT},
      {"header length 2^64 - 1", safetensors("{}", 0, UINT64_MAX - 1), POT_E_LIMIT},
      {"header length past the input", safetensors("{}", 0, 1000), POT_E_MALFORMED},
      {"a tensor of 2^62 bytes",
       safetensors(R"({"a":{"dtype":"U8","shape":[4611686018427387904],"data_offsets":[0,4611686018427387904]}})", 8),
       POT_E_MALFORMED},
      {"shape product overflows 64 bits",
       safetensors(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       POT_E_LIMIT},
      {"element count times dtype size overflows",
       safetensors(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8), POT_E_LIMIT},
      {"33 dimensions",
       safetensors(R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1),
       POT_E_LIMIT},
      {"a 1025-byte name",
       safetensors(R"({")" + std::string(1025, 'n') + R"(":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
       POT_E_LIMIT},
      {"offset 2^64 - 1", safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})", 1),
       POT_E_MALFORMED},
  };
  for (const Case &c : cases)
    expect_refused(c.what, c.want, c.bytes.size(), [&](pot_error **e) {
      pot_digest d;
      return pot_sample_digest(&d, c.bytes.data(), c.bytes.size(), e);
    });
}

TEST(HugeClaims, SafetensorsFiles) {
  pot::test::TempDir dir;
  const Bytes claims_2e62 = safetensors("{}", 0, uint64_t{1} << 62);
  write_file(dir.file("a"), claims_2e62);
  expect_refused("file whose header claims 2^62 bytes", POT_E_LIMIT, claims_2e62.size(), [&](pot_error **e) {
    pot_safetensors *f = nullptr;
    const pot_status s = pot_safetensors_open(&f, dir.file("a").c_str(), e);
    pot_safetensors_free(f);
    return s;
  });
  const Bytes big = safetensors(R"({"a":{"dtype":"U8","shape":[4611686018427387904],"data_offsets":[0,4611686018427387904]}})", 8);
  write_file(dir.file("b"), big);
  expect_refused("file with a tensor of 2^62 bytes", POT_E_MALFORMED, big.size(), [&](pot_error **e) {
    pot_safetensors *f = nullptr;
    const pot_status s = pot_safetensors_open(&f, dir.file("b").c_str(), e);
    pot_safetensors_free(f);
    return s;
  });
}

TEST(HugeClaims, MerkleProofs) {
  const pot_digest leaf = filled(1), root = filled(2);
  // 129 hashes: more than any tree of up to 2^64 - 1 leaves needs.
  const Bytes long_proof(129 * 32, 3);
  expect_refused("inclusion proof of 129 hashes", POT_E_LIMIT, long_proof.size(), [&](pot_error **e) {
    return pot_merkle_verify_inclusion(0, UINT64_MAX, &leaf, long_proof.data(), long_proof.size(), &root, e);
  });
  expect_refused("consistency proof of 129 hashes", POT_E_LIMIT, long_proof.size(), [&](pot_error **e) {
    return pot_merkle_verify_consistency(1, UINT64_MAX, &leaf, &root, long_proof.data(), long_proof.size(), e);
  });
  // A manifest whose proof field claims 2^32 hashes (2^37 bytes) in a few bytes.
  Bytes m = valid_manifest();
  Bytes claim;
  put_varint(claim, uint64_t{5} << 3 | 2);  // a length-delimited field
  put_varint(claim, uint64_t{32} << 32);
  claim.insert(claim.end(), 64, 0);
  m.insert(m.end(), claim.begin(), claim.end());
  const Commitment c = decoded_commitment();
  expect_refused("manifest with a proof claiming 2^32 hashes", POT_E_MALFORMED, m.size(), [&](pot_error **e) {
    pot_opening_check check;
    const pot_digest r = filled(5);
    const pot_status s = pot_opening_verify(&check, c.get(), 2, 8, &r, m.data(), m.size(), nullptr, nullptr, 1, e);
    EXPECT_EQ(check, POT_CHECK_MANIFEST);
    return s;
  });
}

TEST(HugeClaims, ManyTinyRepeatedFields) {
  // Half a million empty samples (2 bytes each): the decoder's objects per
  // sample must stay within the per-byte bound.
  Bytes m = valid_manifest();
  for (int i = 0; i < 500000; ++i) m.insert(m.end(), {11 << 3 | 2, 0});
  const Commitment c = decoded_commitment();
  const pot_digest root = filled(5);
  expect_refused("a manifest of 500000 empty samples", POT_E_MALFORMED, m.size(), [&](pot_error **e) {
    pot_opening_check check;
    return pot_opening_verify(&check, c.get(), 2, 8, &root, m.data(), m.size(), nullptr, nullptr, 1, e);
  });
  // The smallest samples that pass that check (a 10-byte payload each).
  Bytes smallest = valid_manifest();
  const Bytes payload = safetensors("{}", 0);
  for (int i = 0; i < 80000; ++i) {
    smallest.insert(smallest.end(), {11 << 3 | 2, 12, 2 << 3 | 2, 10});
    smallest.insert(smallest.end(), payload.begin(), payload.end());
  }
  expect_refused("a manifest of 80000 smallest samples", POT_E_MALFORMED, smallest.size(), [&](pot_error **e) {
    pot_opening_check check;
    return pot_opening_verify(&check, c.get(), 2, 8, &root, smallest.data(), smallest.size(), nullptr, nullptr, 1, e);
  });
  // A ledger state of many tiny runs, challenges, commits and beacons.
  for (const auto &[what, element] : std::vector<std::pair<const char *, Bytes>>{
           {"a ledger state of 200000 empty runs", {5 << 3 | 2, 0}},
           {"a ledger state of 200000 empty challenges", {6 << 3 | 2, 0}},
           {"a ledger state of 100000 empty beacons",
            [] {
              Bytes run = {1 << 3 | 2, 32};
              run.resize(run.size() + 32, 1);
              run.insert(run.end(), {2 << 3 | 2, 32});
              run.resize(run.size() + 32, 2);
              for (int i = 0; i < 100000; ++i) run.insert(run.end(), {6 << 3 | 2, 0});
              Bytes b = {5 << 3 | 2};
              for (size_t v = run.size(); ; v >>= 7) {
                b.push_back(static_cast<uint8_t>((v & 0x7F) | (v >= 0x80 ? 0x80 : 0)));
                if (v < 0x80) break;
              }
              b.insert(b.end(), run.begin(), run.end());
              return b;
            }()}}) {
    Bytes state = {1 << 3, 1};
    const bool one = element.size() > 2;
    for (int i = 0; i < (one ? 1 : 200000); ++i) state.insert(state.end(), element.begin(), element.end());
    expect_refused(what, POT_E_MALFORMED, state.size(), [&](pot_error **e) {
      pot_ledger *l = nullptr;
      return pot_ledger_load(&l, state.data(), state.size(), e);
    });
  }
  // Runs of the smallest size the walk lets through (34 bytes: a run_id).
  Bytes runs = {1 << 3, 2};
  for (int i = 0; i < 15000; ++i) {
    runs.insert(runs.end(), {5 << 3 | 2, 34, 1 << 3 | 2, 32});
    runs.resize(runs.size() + 32, static_cast<uint8_t>(i));
  }
  expect_refused("a ledger state of 15000 smallest runs", POT_E_MALFORMED, runs.size(), [&](pot_error **e) {
    pot_ledger *l = nullptr;
    return pot_ledger_load(&l, runs.data(), runs.size(), e);
  });
}

TEST(HugeClaims, CanonicalMessages) {
  // A length-delimited field claiming 2^40 bytes, at the end of each message.
  Bytes claim;
  put_varint(claim, uint64_t{1} << 3 | 2);
  put_varint(claim, uint64_t{1} << 40);
  claim.insert(claim.end(), 16, 0xAB);
  for (const char *name : {"pot_spec_decode", "pot_commitment_decode", "pot_task_decode", "pot_ledger_load"})
    expect_refused(name, POT_E_MALFORMED, claim.size(),
                   [&](pot_error **e) { return decoder(name).run(claim.data(), claim.size(), e); });
  // Past the size limits: refused on the length alone.
  const Bytes spec(65537, 0), commitment(1025, 0);
  expect_refused("spec of 65537 bytes", POT_E_LIMIT, spec.size(), [&](pot_error **e) {
    pot_spec *s = nullptr;
    return pot_spec_decode(&s, spec.data(), spec.size(), e);
  });
  expect_refused("commitment of 1025 bytes", POT_E_LIMIT, commitment.size(), [&](pot_error **e) {
    pot_commitment *c = nullptr;
    return pot_commitment_decode(&c, commitment.data(), commitment.size(), e);
  });
}

TEST(HugeClaims, ScheduleEntries) {
  const Bytes tag = {12, 'p', 'o', 't', '/', 'v', '1', '/', 's', 'c', 'h', 'e', 'd'};
  auto entry = [&](uint32_t micro, uint32_t count, size_t payload) {
    Bytes b = tag;
    put_u64le(b, 1);
    put_u32le(b, micro);
    put_u32le(b, count);
    b.resize(b.size() + payload, 0);
    return b;
  };
  struct Case {
    const char *what;
    Bytes bytes;
    pot_status want;
  } cases[] = {
      {"65536 micro-batches in 25 bytes", entry(65536, 1, 0), POT_E_MALFORMED},
      {"2^32 - 1 micro-batches", entry(UINT32_MAX, 1, 0), POT_E_MALFORMED},
      {"2^32 - 1 indices in 8 bytes", entry(1, UINT32_MAX, 8), POT_E_LIMIT},
      {"2^24 indices in 8 bytes", entry(1, 1u << 24, 8), POT_E_MALFORMED},
  };
  for (const Case &c : cases)
    expect_refused(c.what, c.want, c.bytes.size(), [&](pot_error **e) {
      uint64_t step, indices[4];
      uint32_t sizes[4];
      size_t count = 4, micro = 4;
      return pot_schedule_entry_decode(&step, indices, &count, sizes, &micro, c.bytes.data(), c.bytes.size(), e);
    });
}

TEST(HugeClaims, LogsAndTrees) {
  Bytes log;
  put_u64le(log, uint64_t{1} << 63);  // a log of 2^63 leaves, no hashes
  expect_refused("log claiming 2^63 leaves", POT_E_MALFORMED, log.size(), [&](pot_error **e) {
    pot_log *l = nullptr;
    return pot_log_load(&l, log.data(), log.size(), e);
  });
  Bytes full;
  put_u64le(full, UINT64_MAX);
  expect_refused("log claiming 2^64 - 1 leaves", POT_E_MALFORMED, full.size(), [&](pot_error **e) {
    pot_log *l = nullptr;
    return pot_log_load(&l, full.data(), full.size(), e);
  });
}

TEST(HugeClaims, ArgumentsOfDerivations) {
  const pot_digest run = filled(9);
  uint64_t steps[4];
  const Bytes beacon(32, 1), huge_beacon(1025, 1);
  expect_refused("2^32 challenge rounds", POT_E_LIMIT, beacon.size(), [&](pot_error **e) {
    return pot_challenge_derive(steps, size_t{1} << 32, beacon.data(), beacon.size(), &run, UINT64_MAX, e);
  });
  expect_refused("a 1025-byte beacon", POT_E_LIMIT, huge_beacon.size(), [&](pot_error **e) {
    return pot_challenge_derive(steps, 1, huge_beacon.data(), huge_beacon.size(), &run, 10, e);
  });
  expect_refused("a seeded schedule over 2^40 samples", POT_E_LIMIT, 0, [&](pot_error **e) {
    pot_bytes out{};
    return pot_seeded_schedule_entry(&out, 1, uint64_t{1} << 40, 4, 1, 1, e);
  });
  const uint64_t shape[3] = {uint64_t{1} << 32, uint64_t{1} << 32, uint64_t{1} << 32};
  const uint8_t data[8] = {};
  expect_refused("a tensor whose shape overflows 64 bits", POT_E_LIMIT, 0, [&](pot_error **e) {
    pot_digest d;
    return pot_tensor_digest(&d, "t", POT_DTYPE_F64, shape, 3, data, sizeof data, 1, e);
  });
}

TEST(HugeClaims, JsonText) {
  // Nesting 500000 deep (within POT_MAX_JSON_BYTES), text past it, and
  // numbers past 2^64: refused without recursion or a matching allocation.
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  pot_ledger *l = nullptr;
  ASSERT_EQ(pot_ledger_new(&l, pot::test::kLedgerConfigJson, nullptr), POT_OK);
  expect_refused("ledger call nested 500000 deep", POT_E_INVALID_ARGUMENT, deep.size(), [&](pot_error **e) {
    pot_bytes out{};
    return pot_ledger_apply(&out, l, deep.c_str(), e);
  });
  expect_refused("spec JSON nested 500000 deep", POT_E_INVALID_ARGUMENT, deep.size(), [&](pot_error **e) {
    pot_spec *s = nullptr;
    return pot_spec_from_json(&s, deep.c_str(), e);
  });
  expect_refused("commitment JSON nested 500000 deep", POT_E_INVALID_ARGUMENT, deep.size(), [&](pot_error **e) {
    pot_commitment *c = nullptr;
    return pot_commitment_from_json(&c, deep.c_str(), e);
  });
  // The depth bound is exact: 64 nested arrays are parsed (and refused as no
  // spec), 65 are refused for their depth.
  for (const int levels : {64, 65}) {
    const std::string nested = std::string(levels, '[') + std::string(levels, ']');
    pot_spec *s = nullptr;
    pot_error *e = nullptr;
    EXPECT_EQ(pot_spec_from_json(&s, nested.c_str(), &e), POT_E_INVALID_ARGUMENT);
    const std::string message = pot_error_message(e);
    EXPECT_EQ(message.find("nests deeper than 64 levels") != std::string::npos, levels == 65) << message;
    pot_error_free(e);
  }
  const std::string too_long = "[" + std::string(POT_MAX_JSON_BYTES, ' ') + "]";
  expect_refused("a ledger call past POT_MAX_JSON_BYTES", POT_E_LIMIT, too_long.size(), [&](pot_error **e) {
    pot_bytes out{};
    return pot_ledger_apply(&out, l, too_long.c_str(), e);
  });
  expect_refused("spec JSON past POT_MAX_JSON_BYTES", POT_E_LIMIT, too_long.size(), [&](pot_error **e) {
    pot_spec *s = nullptr;
    return pot_spec_from_json(&s, too_long.c_str(), e);
  });
  const std::string huge_number =
      R"({"call":"challenge_info","challenge_id":184467440737095516160000})";
  expect_refused("a challenge id past 2^64", POT_E_INVALID_ARGUMENT, huge_number.size(), [&](pot_error **e) {
    pot_bytes out{};
    return pot_ledger_apply(&out, l, huge_number.c_str(), e);
  });
  pot_ledger_free(l);
}

// ---------------------------------------------------------------------------
// Empty and truncated inputs.

TEST(EmptyInputs, EveryDecoderRefusesNothing) {
  const uint8_t one = 0;
  for (const auto &d : decoders()) {
    expect_refused(d.name, POT_E_MALFORMED, 0, [&](pot_error **e) { return d.run(nullptr, 0, e); });
    expect_refused(d.name, POT_E_MALFORMED, 0, [&](pot_error **e) { return d.run(&one, 0, e); });
  }
  // Text that is not JSON is malformed; JSON of the wrong shape is an invalid argument.
  for (const char *text : {"", " ", "null", "{}", "[]"}) {
    const pot_status want = std::string(text).find_first_not_of(' ') == std::string::npos ? POT_E_MALFORMED
                                                                                          : POT_E_INVALID_ARGUMENT;
    pot_spec *s = nullptr;
    pot_commitment *c = nullptr;
    expect_refused("pot_spec_from_json", want, 1, [&](pot_error **e) { return pot_spec_from_json(&s, text, e); });
    expect_refused("pot_commitment_from_json", want, 1,
                   [&](pot_error **e) { return pot_commitment_from_json(&c, text, e); });
    pot_ledger *l = nullptr;
    ASSERT_EQ(pot_ledger_new(&l, pot::test::kLedgerConfigJson, nullptr), POT_OK);
    expect_refused("pot_ledger_apply", want, 1, [&](pot_error **e) {
      pot_bytes out{};
      return pot_ledger_apply(&out, l, text, e);
    });
    pot_ledger_free(l);
  }
  const pot_digest d = filled(1);
  const Commitment c = decoded_commitment();
  expect_refused("manifest of no bytes", POT_E_MALFORMED, 0, [&](pot_error **e) {
    pot_opening_check check;
    return pot_opening_verify(&check, c.get(), 1, 1, &d, nullptr, 0, nullptr, nullptr, 1, e);
  });
  expect_refused("empty beacon", POT_E_INVALID_ARGUMENT, 0, [&](pot_error **e) {
    uint64_t steps[1];
    return pot_challenge_derive(steps, 1, nullptr, 0, &d, 10, e);
  });
  const std::string statement =
      R"({"run_id": ")" + std::string(64, '0') +
      R"(", "step": 1, "challenge_id": 0, "mode": "bitwise", "kind": "unavailable", "environment":
          {"framework_version": "1.13", "intra_op_threads": 1, "hardware_class": "cpu"}})";
  expect_refused("empty salt", POT_E_INVALID_ARGUMENT, 0, [&](pot_error **e) {
    const uint8_t id = 'v';
    return pot_witness_verify_reveal(&d, statement.c_str(), nullptr, 0, &id, 1, e);
  });
  expect_refused("empty identity", POT_E_INVALID_ARGUMENT, 0, [&](pot_error **e) {
    const Bytes salt(16, 1);
    return pot_witness_verify_reveal(&d, statement.c_str(), salt.data(), salt.size(), nullptr, 0, e);
  });
  expect_refused("witness statement that is not JSON", POT_E_MALFORMED, 0, [&](pot_error **e) {
    const Bytes salt(16, 1);
    const uint8_t id = 'v';
    return pot_witness_verify_reveal(&d, "{\"run_id\":", salt.data(), salt.size(), &id, 1, e);
  });
  expect_refused("witness statement of protocol 1 (no challenge, environment or kind)", POT_E_INVALID_ARGUMENT, 0,
                 [&](pot_error **e) {
                   const Bytes salt(16, 1);
                   const uint8_t id = 'v';
                   const std::string v1 = R"({"run_id": ")" + std::string(64, '0') +
                                          R"(", "step": 1, "replayed_state": ")" + std::string(64, '0') +
                                          R"(", "bucket": 0})";
                   return pot_witness_verify_reveal(&d, v1.c_str(), salt.data(), salt.size(), &id, 1, e);
                 });
  pot::test::TempDir dir;
  write_file(dir.file("empty"), {});
  expect_refused("empty safetensors file", POT_E_MALFORMED, 0, [&](pot_error **e) {
    pot_safetensors *f = nullptr;
    return pot_safetensors_open(&f, dir.file("empty").c_str(), e);
  });
  // An empty tree file is a tree of no leaves (what a crash between creating
  // the file and writing its header leaves); it has no data to lose.
  pot_tree *t = nullptr;
  ASSERT_EQ(pot_tree_open(&t, dir.file("empty").c_str(), nullptr), POT_OK);
  pot_tree_free(t);
}

// Every strict prefix of a valid input is refused: fixed layouts as
// malformed, canonical messages as malformed or invalid, a manifest at some
// check of pot_opening_verify.
TEST(TruncatedInputs, EveryPrefixOfEveryFormat) {
  pot_log *log = nullptr;
  ASSERT_EQ(pot_log_new(&log, nullptr), POT_OK);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(pot_log_append(log, &i, sizeof i, nullptr), POT_OK);
  pot_bytes saved{};
  ASSERT_EQ(pot_log_save(&saved, log, nullptr), POT_OK);
  const Bytes log_bytes(saved.data, saved.data + saved.len);
  pot_bytes_free(&saved);
  pot_log_free(log);
  const Bytes sample = safetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  const std::vector<std::pair<std::string, Bytes>> fixed = {
      {"pot_schedule_entry_decode", vector_entry()},
      {"pot_step_leaf_decode", vector_leaf()},
      {"pot_log_load", log_bytes},
      {"pot_sample_digest", sample},
  };
  for (const auto &[name, full] : fixed) {
    const Decoder &d = decoder(name);
    ASSERT_EQ(d.run(full.data(), full.size(), nullptr), POT_OK) << name;
    for (size_t n = 0; n < full.size(); ++n) {
      const Call c = measure([&, &bytes = full](pot_error **e) { return d.run(bytes.data(), n, e); });
      EXPECT_EQ(c.status, POT_E_MALFORMED) << name << " prefix " << n << ": " << c.message;
      EXPECT_LE(c.peak, kPerInputByte * n + kConstant) << name;
    }
  }
  // Canonical messages: a prefix of the spec or the commitment lacks a
  // field the rules require, so each is refused (malformed or invalid).
  // The one exception: the vector spec ends with its optional lr_schedule
  // (field 17), and the prefix that drops that field whole is another
  // valid spec (a constant rate), with another digest.
  for (const auto &[name, full] : std::vector<std::pair<std::string, Bytes>>{
           {"pot_spec_decode", vector_spec()}, {"pot_commitment_decode", vector_commitment()},
           {"pot_task_decode", vector_task()}}) {
    size_t valid = 0;
    for (size_t n = 0; n < full.size(); ++n) {
      const Call c = measure([&, &dec = decoder(name), &bytes = full](pot_error **e) { return dec.run(bytes.data(), n, e); });
      if (c.status == POT_OK && name == "pot_spec_decode" && full[n] == 0x8a && full[n + 1] == 0x01) {
        ++valid;  // the prefix ends where field 17's tag (0x8a 0x01) begins
        continue;
      }
      EXPECT_TRUE(c.status == POT_E_MALFORMED || c.status == POT_E_INVALID_ARGUMENT)
          << name << " prefix " << n << ": " << pot_status_name(c.status) << " " << c.message;
    }
    EXPECT_EQ(valid, name == "pot_spec_decode" ? 1u : 0u) << name;
  }
  // The manifest, through pot_opening_verify: a prefix fails at check 1 or
  // (when it parses) at a later check, never passes.
  const Bytes m = valid_manifest();
  const Commitment c = decoded_commitment();
  const pot_digest root = filled(5);
  for (size_t n = 0; n < m.size(); ++n) {
    pot_opening_check check = POT_CHECK_OK;
    const Call call = measure([&](pot_error **e) {
      return pot_opening_verify(&check, c.get(), 2, 8, &root, m.data(), n, nullptr, nullptr, 1, e);
    });
    EXPECT_NE(call.status, POT_OK) << "manifest prefix " << n;
    EXPECT_NE(check, POT_CHECK_OK) << "manifest prefix " << n;
    EXPECT_LE(call.peak, kPerInputByte * n + kConstant) << "manifest prefix " << n;
  }
}

TEST(TruncatedInputs, EveryPrefixOfFiles) {
  pot::test::TempDir dir;
  // A safetensors file of two tensors, cut at every byte.
  pot_safetensors_writer *w = nullptr;
  ASSERT_EQ(pot_safetensors_writer_new(&w, nullptr), POT_OK);
  const float a[3] = {1, 2, 3};
  const uint64_t shape[1] = {3};
  ASSERT_EQ(pot_safetensors_writer_add(w, "a", POT_DTYPE_F32, shape, 1, a, sizeof a, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(w, "b", POT_DTYPE_F32, shape, 1, a, sizeof a, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_write(w, dir.file("full").c_str(), nullptr), POT_OK);
  pot_safetensors_writer_free(w);
  std::ifstream in(dir.file("full"), std::ios::binary);
  const Bytes full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t n = 0; n < full.size(); ++n) {
    write_file(dir.file("cut"), Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(n)));
    expect_refused("truncated safetensors file", POT_E_MALFORMED, n, [&](pot_error **e) {
      pot_safetensors *f = nullptr;
      return pot_safetensors_open(&f, dir.file("cut").c_str(), e);
    });
  }
  // A stored tree of 5 leaves: every cut inside a record is a torn append.
  pot_tree *t = nullptr;
  ASSERT_EQ(pot_tree_open(&t, dir.file("tree").c_str(), nullptr), POT_OK);
  for (int i = 0; i < 5; ++i) {
    uint64_t index;
    ASSERT_EQ(pot_tree_append(&index, t, &i, sizeof i, nullptr), POT_OK);
  }
  ASSERT_EQ(pot_tree_flush(t, nullptr), POT_OK);
  pot_tree_free(t);
  std::ifstream tin(dir.file("tree"), std::ios::binary);
  const Bytes tree((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
  size_t opened = 0;
  for (size_t n = 1; n < tree.size(); ++n) {
    write_file(dir.file("cut-tree"), Bytes(tree.begin(), tree.begin() + static_cast<ptrdiff_t>(n)));
    const Call c = measure([&](pot_error **e) {
      pot_tree *x = nullptr;
      const pot_status s = pot_tree_open(&x, dir.file("cut-tree").c_str(), e);
      pot_tree_free(x);
      return s;
    });
    EXPECT_TRUE(c.status == POT_OK || c.status == POT_E_MALFORMED) << n << ": " << c.message;
    if (c.status == POT_OK) ++opened;  // a cut between whole records: a shorter tree
    EXPECT_LE(c.peak, kPerInputByte * n + kConstant);
  }
  EXPECT_LE(opened, 5u);  // at most one per record boundary
}

// ---------------------------------------------------------------------------
// NaN and infinite values: digested as their bits, flagged where judged.

TEST(NonFinite, TensorsAreDigestedAsBits) {
  auto digest = [](uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, 4);
    const float data[2] = {v, 1.0f};
    const uint64_t shape[1] = {2};
    pot_digest d;
    EXPECT_EQ(pot_tensor_digest(&d, "t", POT_DTYPE_F32, shape, 1, data, sizeof data, 1, nullptr), POT_OK);
    return std::string(reinterpret_cast<const char *>(d.bytes), 32);
  };
  const uint32_t quiet_nan = 0x7fc00000, other_nan = 0x7fc00001, neg_nan = 0xffc00000, inf = 0x7f800000,
                 neg_inf = 0xff800000, zero = 0, neg_zero = 0x80000000;
  EXPECT_EQ(digest(quiet_nan), digest(quiet_nan));  // the same bits, the same digest
  const std::vector<std::string> all = {digest(quiet_nan), digest(other_nan), digest(neg_nan), digest(inf),
                                        digest(neg_inf),   digest(zero),      digest(neg_zero)};
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i], all[j]) << i << " " << j;
}

TEST(NonFinite, NormsAndLossesAreFlagged) {
  pot::test::TempDir dir;
  auto write = [&](const std::string &name, float v) {
    pot_safetensors_writer *w = nullptr;
    EXPECT_EQ(pot_safetensors_writer_new(&w, nullptr), POT_OK);
    const float data[2] = {v, 1.0f};
    const uint64_t shape[1] = {2};
    EXPECT_EQ(pot_safetensors_writer_add(w, "param/w", POT_DTYPE_F32, shape, 1, data, sizeof data, nullptr), POT_OK);
    EXPECT_EQ(pot_safetensors_writer_write(w, dir.file(name).c_str(), nullptr), POT_OK);
    pot_safetensors_writer_free(w);
    pot_safetensors *f = nullptr;
    EXPECT_EQ(pot_safetensors_open(&f, dir.file(name).c_str(), nullptr), POT_OK);
    return f;
  };
  pot_safetensors *pre = write("pre", 0.5f), *nan = write("nan", std::nanf("")),
                  *inf = write("inf", std::numeric_limits<float>::infinity());
  for (pot_safetensors *post : {nan, inf}) {
    double norm = 0;
    ASSERT_EQ(pot_update_norm(&norm, pre, post, "", nullptr), POT_OK);
    EXPECT_FALSE(std::isfinite(norm));
    int64_t bucket = 0;
    ASSERT_EQ(pot_norm_bucket(&bucket, norm, 16, nullptr), POT_OK);
    EXPECT_EQ(bucket, pot_norm_bucket_nonfinite());
    EXPECT_EQ(pot_norm_buckets_match(bucket, pot_norm_bucket_nonfinite()), 1);
    int64_t finite = 0;
    ASSERT_EQ(pot_norm_bucket(&finite, 1.0, 16, nullptr), POT_OK);
    EXPECT_EQ(pot_norm_buckets_match(bucket, finite), 0);
    EXPECT_EQ(pot_norm_buckets_match(bucket, pot_norm_bucket_zero()), 0);
  }
  for (pot_safetensors *f : {pre, nan, inf}) pot_safetensors_free(f);
  // A loss sequence with NaN and Inf: flagged non_finite, never skipped.
  std::vector<double> losses(50);
  for (size_t i = 0; i < losses.size(); ++i) losses[i] = 4.0 - 0.05 * static_cast<double>(i);
  losses[10] = std::nan("");
  losses[30] = -std::numeric_limits<double>::infinity();
  pot_losscheck_report *r = nullptr;
  ASSERT_EQ(pot_losscheck_run(&r, losses.data(), losses.size(), nullptr, nullptr), POT_OK);
  std::vector<uint64_t> flagged;
  for (size_t i = 0; i < pot_losscheck_report_count(r); ++i) {
    pot_loss_flag_kind kind;
    uint64_t first, last;
    ASSERT_EQ(pot_losscheck_report_flag(&kind, &first, &last, nullptr, r, i, nullptr), POT_OK);
    if (kind == POT_LOSS_NON_FINITE) flagged.push_back(first);
  }
  pot_losscheck_report_free(r);
  EXPECT_EQ(flagged, (std::vector<uint64_t>{11, 31}));
  // A step leaf records a NaN loss by its bits.
  uint8_t leaf[POT_STEP_LEAF_SIZE];
  const pot_digest d = filled(3);
  ASSERT_EQ(pot_step_leaf_encode(leaf, &d, 1, &d, &d, std::nan(""), std::nan(""), nullptr), POT_OK);
  double back = 0, norm = 0;
  ASSERT_EQ(pot_step_leaf_decode(nullptr, nullptr, nullptr, nullptr, &back, &norm, leaf, sizeof leaf, nullptr), POT_OK);
  EXPECT_TRUE(std::isnan(back));
  EXPECT_TRUE(std::isnan(norm));  // encoded; a verifier fails it at check nonfinite
}

// ---------------------------------------------------------------------------
// Duplicate names.

TEST(DuplicateNames, AreRefusedEverywhere) {
  const float data[1] = {1};
  const uint64_t shape[1] = {1};
  pot_state *s = nullptr;
  ASSERT_EQ(pot_state_new(&s, nullptr), POT_OK);
  ASSERT_EQ(pot_state_add_tensor(s, "w", POT_DTYPE_F32, shape, 1, data, sizeof data, nullptr), POT_OK);
  expect_refused("state tensor added twice", POT_E_DUPLICATE, 0, [&](pot_error **e) {
    return pot_state_add_tensor(s, "w", POT_DTYPE_F32, shape, 1, data, sizeof data, e);
  });
  pot_state_free(s);
  pot_safetensors_writer *w = nullptr;
  ASSERT_EQ(pot_safetensors_writer_new(&w, nullptr), POT_OK);
  ASSERT_EQ(pot_safetensors_writer_add(w, "w", POT_DTYPE_F32, shape, 1, data, sizeof data, nullptr), POT_OK);
  expect_refused("writer tensor added twice", POT_E_DUPLICATE, 0, [&](pot_error **e) {
    return pot_safetensors_writer_add(w, "w", POT_DTYPE_F32, shape, 1, data, sizeof data, e);
  });
  pot_safetensors_writer_free(w);
  const Bytes dup = safetensors(
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  expect_refused("safetensors header naming a tensor twice", POT_E_MALFORMED, dup.size(), [&](pot_error **e) {
    pot_digest d;
    return pot_sample_digest(&d, dup.data(), dup.size(), e);
  });
  pot_verdict *v = nullptr;
  ASSERT_EQ(pot_verdict_new(&v, POT_WITNESS_BITWISE, 2, nullptr), POT_OK);
  const pot_digest st = filled(4);
  const uint8_t id[] = {'a'};
  ASSERT_EQ(pot_verdict_add_reveal(v, id, 1, &st, 0, nullptr), POT_OK);
  ASSERT_EQ(pot_verdict_add_reveal(v, id, 1, &st, 0, nullptr), POT_OK);
  // One verifier counted twice would reach the quorum alone: decide refuses.
  expect_refused("a verifier revealing twice", POT_E_INVALID_ARGUMENT, 0, [&](pot_error **e) {
    pot_verdict_outcome outcome;
    size_t cluster = 0;
    return pot_verdict_decide(&outcome, &cluster, v, &st, nullptr, e);
  });
  pot_verdict_free(v);
}

// ---------------------------------------------------------------------------
// Non-canonical encodings of valid values.

TEST(NonCanonical, EveryCanonicalDecoderRefusesOtherEncodings) {
  auto refuse = [](const char *what, const Decoder &d, const Bytes &b) {
    expect_refused(what, POT_E_MALFORMED, b.size(), [&](pot_error **e) { return d.run(b.data(), b.size(), e); });
  };
  for (const auto &[name, full] : std::vector<std::pair<std::string, Bytes>>{
           {"pot_spec_decode", vector_spec()}, {"pot_commitment_decode", vector_commitment()},
           {"pot_task_decode", vector_task()}}) {
    const Decoder &d = decoder(name);
    ASSERT_EQ(d.run(full.data(), full.size(), nullptr), POT_OK);
    Bytes trailing_default = full;  // field 15 written out with its default 0
    trailing_default.insert(trailing_default.end(), {15 << 3, 0});
    refuse("a default written out", d, trailing_default);
    Bytes unknown = full;  // an unknown field
    unknown.insert(unknown.end(), {static_cast<uint8_t>(100 << 3 & 0xff), static_cast<uint8_t>(100 >> 4 | 0), 1});
    refuse("an unknown field", d, unknown);
    // The first field (a varint or bytes field) with a non-minimal length/value varint.
    Bytes padded = full;
    padded[1] |= 0x80;
    padded.insert(padded.begin() + 2, 0x00);
    refuse("a non-minimal varint", d, padded);
    Bytes repeated = full;  // the first field again at the end
    repeated.insert(repeated.end(), full.begin(), full.begin() + 2 + full[1]);
    refuse("a repeated field", d, repeated);
  }
  Bytes leaf = vector_leaf();
  leaf[1] ^= 1;  // the tag
  refuse("a step leaf with another tag", decoder("pot_step_leaf_decode"), leaf);
  Bytes entry = vector_entry();
  entry.push_back(0);
  refuse("a schedule entry with a trailing byte", decoder("pot_schedule_entry_decode"), entry);
  // The manifest: re-encoded fields out of order are refused at check 1.
  const Bytes m = valid_manifest();
  Bytes swapped;
  {
    // Move the first field (run_id, 34 bytes) to the end.
    swapped.assign(m.begin() + 34, m.end());
    swapped.insert(swapped.end(), m.begin(), m.begin() + 34);
  }
  const Commitment c = decoded_commitment();
  const pot_digest root = filled(5);
  pot_opening_check check = POT_CHECK_OK;
  expect_refused("a manifest with reordered fields", POT_E_MALFORMED, swapped.size(), [&](pot_error **e) {
    return pot_opening_verify(&check, c.get(), 2, 8, &root, swapped.data(), swapped.size(), nullptr, nullptr, 1, e);
  });
  EXPECT_EQ(check, POT_CHECK_MANIFEST);
}

// ---------------------------------------------------------------------------
// The ledger's JSON calls (what a chain's transactions carry): replayed
// reveals, unknown runs and challenges, sealed runs, overflowing numbers.
// Every refused call leaves the saved state byte-identical.

class LedgerCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    transcript_ = pot::test::load_vectors("ledger_transcript.json");
    const json &c = transcript_["config"];
    ASSERT_EQ(pot_ledger_new(&ledger_, c.dump().c_str(), nullptr), POT_OK);
  }
  void TearDown() override { pot_ledger_free(ledger_); }

  // Applies the transcript's calls [0, n).
  void replay(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      json call = transcript_["calls"][i];
      const std::string expect = call["expect"];
      call.erase("expect");
      call.erase("result");
      pot_bytes out{};
      const pot_status s = pot_ledger_apply(&out, ledger_, call.dump().c_str(), nullptr);
      pot_bytes_free(&out);
      ASSERT_EQ(std::string(pot_status_name(s)), expect == "ok" ? "POT_OK" : expect) << i;
    }
  }
  json call(size_t i) const {
    json c = transcript_["calls"][i];
    c.erase("expect");
    c.erase("result");
    return c;
  }
  Bytes save() const {
    pot_bytes out{};
    EXPECT_EQ(pot_ledger_save(&out, ledger_, nullptr), POT_OK);
    Bytes b(out.data, out.data + out.len);
    pot_bytes_free(&out);
    return b;
  }
  void refused(const char *what, pot_status want, const json &c) {
    const Bytes before = save();
    const std::string text = c.dump();
    expect_refused(what, want, text.size(), [&](pot_error **e) {
      pot_bytes out{};
      return pot_ledger_apply(&out, ledger_, text.c_str(), e);
    });
    EXPECT_EQ(save(), before) << what << ": a refused call changed the state";
  }
  size_t index_of(const std::string &name, size_t nth = 0) const {
    for (size_t i = 0; i < transcript_["calls"].size(); ++i)
      if (transcript_["calls"][i]["call"] == name && transcript_["calls"][i]["expect"] == "ok" && nth-- == 0) return i;
    throw std::runtime_error(name);
  }

  json transcript_;
  pot_ledger *ledger_ = nullptr;
};

TEST_F(LedgerCalls, ReplayedRevealsAreRefused) {
  const size_t reveal = index_of("reveal_witness_value");
  replay(reveal + 1);
  refused("the same reveal again", POT_E_DUPLICATE, call(reveal));
  json other = call(reveal);
  other["bucket"] = other["bucket"].get<int64_t>() + 1;  // the same verifier, another value
  refused("a second reveal with another value", POT_E_PROOF_MISMATCH, other);
}

TEST_F(LedgerCalls, UnknownRunsAndChallengesAreRefused) {
  const size_t reveal = index_of("reveal_witness_value");
  replay(reveal);
  json c = call(reveal);
  c["challenge_id"] = 99;
  refused("a reveal for an unknown challenge", POT_E_NOT_FOUND, c);
  c["challenge_id"] = UINT64_MAX;
  refused("a reveal for challenge 2^64 - 1", POT_E_NOT_FOUND, c);
  json commit = call(index_of("commit_witness"));
  commit["challenge_id"] = 7;
  commit["caller"] = "6361726f6c";
  refused("a witness commitment for an unknown challenge", POT_E_NOT_FOUND, commit);
  json issue = call(index_of("issue_challenge"));
  issue["run_id"] = std::string(64, '0');
  issue["now"] = 200;
  refused("a challenge for an unknown run", POT_E_NOT_FOUND, issue);
  json post = call(index_of("post_checkpoint_root"));
  post["run_id"] = std::string(64, '0');
  post["now"] = 200;
  refused("a root for an unknown run", POT_E_NOT_FOUND, post);
  refused("run_info of an unknown run", POT_E_NOT_FOUND, json{{"call", "run_info"}, {"run_id", std::string(64, '0')}});
}

TEST_F(LedgerCalls, SealedAndUnsealedRuns) {
  const size_t seal = index_of("post_checkpoint_root", 1);
  replay(seal);
  json early = call(index_of("issue_challenge"));
  refused("a challenge before the run is sealed", POT_E_STATE, early);
  json long_proof = call(seal);
  long_proof["consistency_proof"] = std::string(2 * 32 * 129, 'c');
  refused("a consistency proof of 129 hashes", POT_E_LIMIT, long_proof);
  replay(0);
  // Seal it, then try to move its root.
  {
    const std::string text = call(seal).dump();
    pot_bytes out{};
    ASSERT_EQ(pot_ledger_apply(&out, ledger_, text.c_str(), nullptr), POT_OK);
    pot_bytes_free(&out);
  }
  json again = call(seal);
  again["now"] = again["now"].get<uint64_t>() + 1;
  refused("a root posted after sealing", POT_E_STATE, again);
  json more = call(index_of("issue_challenge"));
  more["rounds"] = 5;  // rounds are the task's, not an argument
  refused("a challenge that names its own rounds", POT_E_INVALID_ARGUMENT, more);
  json beacon = call(index_of("issue_challenge"));
  beacon["beacon"] = "aa";  // the steps come from the chain's randomness
  refused("a challenge that names its own beacon", POT_E_INVALID_ARGUMENT, beacon);
}

TEST_F(LedgerCalls, OverflowingNumbers) {
  replay(index_of("post_randomness", 1) + 1);
  json issue = call(index_of("issue_challenge"));
  issue["now"] = UINT64_MAX;
  refused("a challenge whose deadlines pass 2^64 - 1", POT_E_OUT_OF_RANGE, issue);
  json randomness = call(index_of("post_randomness"));
  randomness["now"] = json::parse("18446744073709551616");
  refused("randomness of height 2^64", POT_E_INVALID_ARGUMENT, randomness);
  json post = call(index_of("post_checkpoint_root", 1));
  post["size"] = UINT64_MAX;
  post["now"] = 200;
  refused("a root of 2^64 - 1 steps", POT_E_STATE, post);
  for (const char *bad : {"-1", "18446744073709551616", "1e30", "1.5", "\"1\""}) {
    json c = call(index_of("issue_challenge"));
    c["now"] = json::parse(bad);
    refused("now not a u64", POT_E_INVALID_ARGUMENT, c);
  }
}

// ---------------------------------------------------------------------------
// State statistics tables (docs/PROTOCOL.md 5.2): a claimed count of tensors
// the bytes cannot hold is refused before any allocation; a record claiming
// a 4 GiB name is refused as truncated.

TEST(StateStatsTables, HostileCountsAndLengths) {
  pot_digest d;
  Bytes b = {0xFF, 0xFF, 0x0F, 0x00};  // 2^20 - 1 tensors in 4 bytes
  expect_refused("stats table claiming 2^20 - 1 tensors", POT_E_MALFORMED, b.size(),
                 [&](pot_error **e) { return pot_state_stats_digest(&d, b.data(), b.size(), e); });
  b = {0xFF, 0xFF, 0xFF, 0xFF};
  expect_refused("stats table claiming 2^32 - 1 tensors", POT_E_LIMIT, b.size(),
                 [&](pot_error **e) { return pot_state_stats_digest(&d, b.data(), b.size(), e); });
  b = Bytes(4 + 54, 0);
  b[0] = 1;
  b[4] = b[5] = b[6] = b[7] = 0xFF;  // a name of 2^32 - 1 bytes
  expect_refused("stats record naming a 4 GiB name", POT_E_MALFORMED, b.size(),
                 [&](pot_error **e) { return pot_state_stats_digest(&d, b.data(), b.size(), e); });
  pot_bytes out{};
  expect_refused("flags of a NULL table", POT_E_INVALID_ARGUMENT, 0,
                 [&](pot_error **e) { return pot_state_flags(&out, nullptr, 8, b.data(), b.size(), e); });
  expect_refused("stats of a NULL file", POT_E_INVALID_ARGUMENT, 0,
                 [&](pot_error **e) { return pot_safetensors_stats(&out, nullptr, 0, e); });
}

// ---------------------------------------------------------------------------
// Integer overflow in step counts outside the ledger.

TEST(StepOverflow, LargestStepNumbers) {
  uint64_t seed = 0;
  const pot_digest d = filled(6);
  expect_ok("seed of step 2^64 - 1", [&](pot_error **e) { return pot_seed_derive(&seed, 1, &d, UINT64_MAX, e); });
  uint8_t leaf[POT_STEP_LEAF_SIZE];
  expect_ok("leaf of step 2^64 - 1", [&](pot_error **e) { return pot_step_leaf_encode(leaf, &d, UINT64_MAX, &d, &d, 1.0, 0.0, e); });
  uint64_t step = 0;
  pot_digest back;
  double loss;
  ASSERT_EQ(pot_step_leaf_decode(nullptr, &step, &back, nullptr, &loss, nullptr, leaf, sizeof leaf, nullptr), POT_OK);
  EXPECT_EQ(step, UINT64_MAX);
  expect_refused("leaf of step 0", POT_E_INVALID_ARGUMENT, 0,
                 [&](pot_error **e) { return pot_step_leaf_encode(leaf, &d, 0, &d, &d, 1.0, 0.0, e); });
  // Challenges over a run of 2^64 - 1 steps land in 1..2^64 - 1.
  uint64_t steps[8] = {};
  const Bytes beacon(16, 2);
  expect_ok("challenges over 2^64 - 1 steps", [&](pot_error **e) {
    return pot_challenge_derive(steps, 8, beacon.data(), beacon.size(), &d, UINT64_MAX, e);
  });
  for (uint64_t s : steps) EXPECT_GE(s, 1u);
  expect_refused("challenges over 0 steps", POT_E_INVALID_ARGUMENT, 0, [&](pot_error **e) {
    return pot_challenge_derive(steps, 1, beacon.data(), beacon.size(), &d, 0, e);
  });
  // The seeded schedule's stream position (step - 1) * batch overflows.
  expect_refused("seeded schedule entry of step 2^64 - 1", POT_E_OUT_OF_RANGE, 0, [&](pot_error **e) {
    pot_bytes out{};
    return pot_seeded_schedule_entry(&out, 1, 100, 4, 1, UINT64_MAX, e);
  });
  // Proofs at the largest tree sizes.
  const pot_digest root = filled(7);
  expect_refused("inclusion of leaf 2^64 - 1 in a tree of 2^64 - 1", POT_E_OUT_OF_RANGE, 0, [&](pot_error **e) {
    return pot_merkle_verify_inclusion(UINT64_MAX, UINT64_MAX, &d, nullptr, 0, &root, e);
  });
  const Bytes proof63(63 * 32, 1), proof64(64 * 32, 1);
  expect_refused("inclusion of the last leaf of 2^64 - 1", POT_E_PROOF_MISMATCH, proof63.size(), [&](pot_error **e) {
    return pot_merkle_verify_inclusion(UINT64_MAX - 1, UINT64_MAX, &d, proof63.data(), proof63.size(), &root, e);
  });
  expect_refused("one hash too many", POT_E_PROOF_LENGTH, proof64.size(), [&](pot_error **e) {
    return pot_merkle_verify_inclusion(UINT64_MAX - 1, UINT64_MAX, &d, proof64.data(), proof64.size(), &root, e);
  });
  expect_refused("consistency from a larger tree", POT_E_OUT_OF_RANGE, 0, [&](pot_error **e) {
    return pot_merkle_verify_consistency(UINT64_MAX, 1, &d, &root, nullptr, 0, e);
  });
  // An opening for step 2^64 - 1 of a log of 2^64 - 1 leaves.
  const Commitment c = decoded_commitment();
  pot_digest run;
  ASSERT_EQ(pot_commitment_run_id(&run, c.get(), nullptr), POT_OK);
  const Bytes m = valid_manifest(run, UINT64_MAX, UINT64_MAX);
  pot_opening_check check = POT_CHECK_OK;
  expect_refused("opening of step 2^64 - 1", POT_E_OUT_OF_RANGE, m.size(), [&](pot_error **e) {
    return pot_opening_verify(&check, c.get(), UINT64_MAX, UINT64_MAX, &root, m.data(), m.size(), nullptr, nullptr, 1,
                              e);
  });
  EXPECT_EQ(check, POT_CHECK_STEP);
  double p = 0;
  expect_ok("detection probability at 2^64 - 1 steps", [&](pot_error **e) {
    return pot_security_detection_probability(&p, UINT64_MAX, 1, 1000, e);
  });
  EXPECT_GE(p, 0.0);
  EXPECT_LE(p, 1.0);
}

// The meter itself: a decoder that allocated in proportion to a claim would
// be caught (a control: the meter sees a 64 MiB allocation).
TEST(AllocMeter, SeesLargeAllocations) {
  const Call c = measure([](pot_error **) {
    std::vector<uint8_t> big(size_t{64} << 20, 1);
    return big[12345] == 1 ? POT_OK : POT_E_INTERNAL;
  });
  EXPECT_GE(c.peak, size_t{64} << 20);
  EXPECT_GT(c.peak, kPerInputByte * 1000 + kConstant);
}

}  // namespace
