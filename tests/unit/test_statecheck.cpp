// State statistics (docs/PROTOCOL.md 5.2) and the rules over consecutive
// states (5.3).
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include <gtest/gtest.h>

#include "core_test_util.h"
#include "statecheck/state_flags.h"

namespace pot {
namespace {

using hash::DType;
using hash::StTensor;
using statecheck::StateFlag;
using statecheck::StateRule;
using statecheck::StateStats;
using statecheck::TensorStats;
using test::status_of;

StTensor view(const std::string &name, DType d, const Bytes &b) {
  return StTensor{hash::TensorMeta{name, d, {b.size() / hash::dtype_size(d)}}, b};
}

template <typename T>
Bytes raw(const std::vector<T> &v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(StateStats, CountsAndMagnitudesByDtype) {
  const float inf = std::numeric_limits<float>::infinity();
  const Bytes f32 = raw<float>({3.0f, -4.0f, std::nanf(""), -inf, 1e-40f, 0.0f, -0.0f});
  // BF16 1.0 (0x3F80), -2.0 (0xC000), a subnormal (0x0001), +0.
  const Bytes bf16 = raw<uint16_t>({0x3F80, 0xC000, 0x0001, 0x0000});
  // F16 0.5 (0x3800), a subnormal (0x0001: not counted, as check 28), NaN.
  const Bytes f16 = raw<uint16_t>({0x3800, 0x0001, 0x7E00});
  const Bytes i64 = raw<int64_t>({0, 7, 0});
  const StateStats s = statecheck::state_stats(
      {view("a", DType::kF32, f32), view("b", DType::kBF16, bf16), view("c", DType::kF16, f16),
       view("d", DType::kI64, i64)},
      1);
  ASSERT_EQ(s.tensors.size(), 4u);
  const TensorStats &a = s.tensors[0];
  EXPECT_EQ(a.elements, 7u);
  EXPECT_EQ(a.max_abs, 4.0);
  const double sub = static_cast<double>(1e-40f);
  EXPECT_EQ(a.l2_norm, std::sqrt(9.0 + 16.0 + sub * sub));  // lanes 0, 1, 4; then pairwise
  EXPECT_EQ(a.nonfinite, 2u);
  EXPECT_EQ(a.subnormal, 1u);
  EXPECT_EQ(a.zeros, 2u);
  const TensorStats &b = s.tensors[1];
  EXPECT_EQ(b.max_abs, 2.0);
  EXPECT_EQ(b.subnormal, 1u);
  EXPECT_EQ(b.zeros, 1u);
  const TensorStats &c = s.tensors[2];
  EXPECT_EQ(c.max_abs, 0.5);
  EXPECT_EQ(c.subnormal, 0u);
  EXPECT_EQ(c.nonfinite, 1u);
  EXPECT_EQ(c.l2_norm, std::sqrt(0.25 + std::ldexp(1.0, -48)));
  const TensorStats &d = s.tensors[3];
  EXPECT_EQ(d.elements, 3u);
  EXPECT_EQ(d.zeros, 2u);
  EXPECT_EQ(d.max_abs, 0.0);
  EXPECT_EQ(d.l2_norm, 0.0);
}

// The order of section 5.2, written out as plainly as possible: element j of
// a chunk into lane j mod 32, the lanes added pairwise, the chunks in order.
double reference_norm(const std::vector<double> &x, size_t element_bytes) {
  const size_t per_chunk = hash::kChunkSize / element_bytes;
  double total = 0;
  for (size_t c = 0; c * per_chunk < x.size(); ++c) {
    std::vector<double> lanes(32, 0.0);
    for (size_t j = 0; j < per_chunk && c * per_chunk + j < x.size(); ++j) {
      const double v = x[c * per_chunk + j];
      lanes[j % 32] += v * v;
    }
    while (lanes.size() > 1) {
      std::vector<double> next;
      for (size_t k = 0; k < lanes.size(); k += 2) next.push_back(lanes[k] + lanes[k + 1]);
      lanes = next;
    }
    total += lanes[0];
  }
  return std::sqrt(total);
}

// Values spread over 40 binades, so that another order of the additions
// gives other bits (checked against a sequential sum).
std::vector<double> spread(size_t n) {
  std::vector<double> x(n);
  uint64_t r = 88172645463325252ull;
  for (double &v : x) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    v = std::ldexp(static_cast<double>(r >> 11) / 9007199254740992.0, static_cast<int>(r % 40) - 20);
    if (r & 1) v = -v;
  }
  return x;
}

void expect_order(DType d, const std::vector<double> &x, const Bytes &bytes, size_t element_bytes) {
  const double want = reference_norm(x, element_bytes);
  double sequential = 0;
  for (double v : x) sequential += v * v;
  ASSERT_NE(std::sqrt(sequential), want) << "the test needs values whose sum depends on the order";
  for (unsigned threads : {1u, 2u, 4u}) {
    const StateStats s = statecheck::state_stats({view("w", d, bytes)}, threads);
    EXPECT_EQ(std::bit_cast<uint64_t>(s.tensors[0].l2_norm), std::bit_cast<uint64_t>(want))
        << hash::dtype_name(d) << " on " << threads << " threads";
  }
}

// Each dtype's path (F32 and BF16 in explicit vectors, F64 and F16 element by
// element) against the order of section 5.2, over three chunks and a tail.
TEST(StateStats, TheOrderOfEveryAdditionIsFixedWhateverTheThreads) {
  const std::vector<double> x64 = spread(3 * 8192 + 77);
  expect_order(DType::kF64, x64, raw(x64), 8);
  std::vector<float> f(3 * 16384 + 77);
  std::vector<double> x32;
  const std::vector<double> s32 = spread(f.size());
  for (size_t i = 0; i < f.size(); ++i) x32.push_back(f[i] = static_cast<float>(s32[i]));
  expect_order(DType::kF32, x32, raw(f), 4);
  std::vector<uint16_t> h(3 * 32768 + 77);
  std::vector<double> x16;
  const std::vector<double> src = spread(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(src[i])) >> 16);
    x16.push_back(std::bit_cast<float>(static_cast<uint32_t>(h[i]) << 16));
  }
  expect_order(DType::kBF16, x16, raw(h), 2);
}

// The vector paths (baseline, AVX2, AVX-512: whichever this CPU has) give
// the same bits, for values of every class and a partial last block.
TEST(StateStats, EveryVectorPathGivesTheSameBits) {
  std::vector<uint32_t> bits(16384 - 5);
  uint64_t r = 0x9E3779B97F4A7C15ull;
  for (uint32_t &b : bits) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    b = static_cast<uint32_t>(r >> 32);  // random bits: NaN, infinities, subnormals, zeros rarely
  }
  bits[0] = 0, bits[1] = 0x80000000u, bits[2] = 0x00000001u, bits[3] = 0x7f800000u;
  const auto ran = statecheck::kernel_paths_agree(DType::kF32, raw(bits));
  EXPECT_GE(ran.size(), 1u);
  std::vector<uint16_t> half(32768 - 3);
  for (size_t i = 0; i < half.size(); ++i) half[i] = static_cast<uint16_t>(bits[i % bits.size()] >> (i % 16));
  EXPECT_EQ(statecheck::kernel_paths_agree(DType::kBF16, raw(half)), ran);
  std::printf("vector paths compared: %zu\n", ran.size());
}

TEST(StateStats, EncodingRoundTripsAndDigestsUnderItsTag) {
  const Bytes w = test::f32_bytes({1.5f, -2.5f});
  const StateStats s = statecheck::state_stats({view("param/w", DType::kF32, w)}, 1);
  const Bytes enc = s.encode();
  EXPECT_EQ(enc.size(), 4u + 4 + 7 + 1 + 48);
  EXPECT_EQ(StateStats::decode(enc), s);
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v1/state-stats");
  h.update(enc);
  EXPECT_EQ(s.digest(), h.finish());
  EXPECT_NE(s.to_json().find("\"l2_norm\":2.9154759474226504"), std::string::npos) << s.to_json();
}

TEST(StateStats, DecodeRefusesWhatNoStateCouldGive) {
  const Bytes w = test::f32_bytes({1.5f, -2.5f, 0.0f});
  const StateStats good = statecheck::state_stats(
      {view("param/a", DType::kF32, w), view("param/b", DType::kF32, w)}, 1);
  const Bytes enc = good.encode();
  auto refused = [](const Bytes &b) { return status_of([&] { StateStats::decode(b); }); };
  auto with = [&](const std::function<void(StateStats &)> &change) {
    StateStats s = good;
    change(s);
    return refused(s.encode());
  };
  EXPECT_EQ(refused(Bytes(enc.begin(), enc.end() - 1)), Status::kMalformed);
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(refused(longer), Status::kMalformed);
  EXPECT_EQ(refused(Bytes{1, 2}), Status::kMalformed);
  // A count the bytes cannot hold is refused before any allocation.
  Bytes huge = enc;
  huge[0] = 0xFF, huge[1] = 0xFF, huge[2] = 0x0F, huge[3] = 0;
  EXPECT_EQ(refused(huge), Status::kMalformed);
  huge[2] = 0xFF;
  EXPECT_EQ(refused(huge), Status::kLimit);
  EXPECT_EQ(with([](StateStats &s) { std::swap(s.tensors[0], s.tensors[1]); }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[1].name = s.tensors[0].name; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].name = ""; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].max_abs = -1.0; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].max_abs = -0.0; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].l2_norm = std::nan(""); }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].zeros = 4; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].subnormal = 3; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].dtype = static_cast<DType>(99); }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].dtype = DType::kI32; }), Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].dtype = DType::kF16, s.tensors[0].subnormal = 1; }),
            Status::kMalformed);
  EXPECT_EQ(with([](StateStats &s) { s.tensors[0].l2_norm = INFINITY; }), Status::kOk);  // an F64 overflow
}

TEST(StateStats, RefusesTensorsOutOfOrderOrOfTheWrongLength) {
  const Bytes w = test::f32_bytes({1.0f});
  EXPECT_EQ(status_of([&] { statecheck::state_stats({view("b", DType::kF32, w), view("a", DType::kF32, w)}, 1); }),
            Status::kInvalidArgument);
  StTensor t = view("a", DType::kF32, w);
  t.meta.shape = {2};
  EXPECT_EQ(status_of([&] { statecheck::state_stats({t}, 1); }), Status::kInvalidArgument);
}

// One read for the digest and the table: the same bits as the two apart, on
// any thread count, for tensors of several chunks of every dtype class, an
// empty tensor and a partial last chunk.
TEST(StateStats, OneReadGivesTheDigestsAndTheTableOfTwoReads) {
  const std::vector<double> src = spread(3 * 16384 + 77);
  std::vector<float> f(src.begin(), src.end());
  std::vector<uint16_t> h(src.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(f[i]) >> 16);
  std::vector<int64_t> ints(5000);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int64_t>(i % 7) - 3;
  const Bytes b16 = raw(h), b32 = raw(f), b64 = raw(src), bi = raw(ints), none;
  const std::vector<StTensor> tensors{view("a/bf16", DType::kBF16, b16), view("b/empty", DType::kF32, none),
                                      view("c/f32", DType::kF32, b32), view("d/f64", DType::kF64, b64),
                                      view("e/i64", DType::kI64, bi)};
  const StateStats want = statecheck::state_stats(tensors, 1);
  for (unsigned threads : {1u, 2u, 3u}) {
    const statecheck::DigestedState got = statecheck::digest_and_stats(tensors, threads);
    EXPECT_EQ(got.stats, want) << threads;
    ASSERT_EQ(got.tensor_digests.size(), tensors.size());
    for (size_t t = 0; t < tensors.size(); ++t)
      EXPECT_EQ(got.tensor_digests[t], hash::tensor_digest(tensors[t].meta, tensors[t].data, 1)) << t;
  }
  EXPECT_EQ(status_of([&] { statecheck::digest_and_stats({tensors[1], tensors[0]}, 1); }), Status::kInvalidArgument);
}

TensorStats stats(const std::string &name, double max_abs, double l2, uint64_t elements = 64) {
  TensorStats s;
  s.name = name;
  s.elements = elements;
  s.max_abs = max_abs;
  s.l2_norm = l2;
  return s;
}

// Round 3, attack 1: the forged step puts 1e15 into four columns of the
// positional embedding and saturates Adam's moments; an honest step moves
// every statistic by a few percent.
TEST(StateFlags, TheStepThatPoisonsAStateIsFlaggedAndAnHonestOneIsNot) {
  const StateStats before{{stats("optim/wpe/exp_avg", 1e-3, 1e-2), stats("optim/wpe/exp_avg_sq", 1e-6, 1e-5),
                           stats("param/head", 0.4, 3.0), stats("param/wpe", 0.3, 2.0)}};
  const StateStats honest{{stats("optim/wpe/exp_avg", 1.1e-3, 1.2e-2), stats("optim/wpe/exp_avg_sq", 1.2e-6, 1e-5),
                           stats("param/head", 0.41, 3.01), stats("param/wpe", 0.31, 2.02)}};
  EXPECT_TRUE(statecheck::state_flags(before, honest).empty());
  const StateStats poisoned{{stats("optim/wpe/exp_avg", 0x1p63, 0x1p66), stats("optim/wpe/exp_avg_sq", 0x1p126, 0x1p129),
                             stats("param/head", 0.41, 3.01), stats("param/wpe", 1e15, 1.6e16)}};
  const auto flags = statecheck::state_flags(before, poisoned);
  const std::vector<StateFlag> want = {
      {StateRule::kMaxAbsJump, "optim/wpe/exp_avg", 1e-3, 0x1p63},
      {StateRule::kNormJump, "optim/wpe/exp_avg", 1e-2, 0x1p66},
      {StateRule::kSaturated, "optim/wpe/exp_avg", 1e-3, 0x1p63},
      {StateRule::kMaxAbsJump, "optim/wpe/exp_avg_sq", 1e-6, 0x1p126},
      {StateRule::kNormJump, "optim/wpe/exp_avg_sq", 1e-5, 0x1p129},
      {StateRule::kSaturated, "optim/wpe/exp_avg_sq", 1e-6, 0x1p126},
      {StateRule::kMaxAbsJump, "param/wpe", 0.3, 1e15},
      {StateRule::kNormJump, "param/wpe", 2.0, 1.6e16},
  };
  EXPECT_EQ(flags, want);
  // The saturation is flagged where it starts: the next step, saturated on
  // both sides, is not (the certain challenge replays the first).
  EXPECT_TRUE(statecheck::state_flags(poisoned, poisoned).empty());
  // At step 1 the moments are new: saturated on their own.
  const StateStats s0{{stats("param/head", 0.4, 3.0), stats("param/wpe", 0.3, 2.0)}};
  const auto first = statecheck::state_flags(s0, poisoned);
  EXPECT_EQ(std::count_if(first.begin(), first.end(), [](const StateFlag &f) { return f.rule == StateRule::kSaturated; }),
            2);
  EXPECT_EQ(first.back(), (StateFlag{StateRule::kNormJump, "param/wpe", 2.0, 1.6e16}));
}

TEST(StateFlags, CollapsedNonFiniteAndChangedTensors) {
  const StateStats before{{stats("optim/m", 0.5, 20.0), stats("param/a", 0.5, 0.9), stats("param/b", 1.0, 5.0)}};
  TensorStats nan = stats("param/b", 1.0, 5.0);
  nan.nonfinite = 1;
  const StateStats after{{stats("optim/m", 1e-9, 1e-8), stats("param/a", 1e-9, 1e-9, 32), nan}};
  const std::vector<StateFlag> want = {
      {StateRule::kNormCollapse, "optim/m", 20.0, 1e-8},
      {StateRule::kChanged, "param/a", 64.0, 32.0},  // a norm below 1 collapsing is not flagged; the size is
      {StateRule::kNonfinite, "param/b", 0.0, 1.0},
  };
  EXPECT_EQ(statecheck::state_flags(before, after), want);
  EXPECT_STREQ(statecheck::state_rule_name(StateRule::kNormCollapse), "norm_collapse");
  EXPECT_EQ(statecheck::flags_to_json({want[2]}), R"([{"rule":"nonfinite","tensor":"param/b","before":0.0,"after":1.0}])");
}

}  // namespace
}  // namespace pot
