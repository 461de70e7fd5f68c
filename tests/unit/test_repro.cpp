// The arithmetic pot-repro/1 on arrays (src/repro, docs/PROTOCOL.md 14.6):
// exp and log against the true functions, the sum order against its
// definition written out here, and every matrix-product path and row split
// against the fma chain of the definition, every element-wise path against
// the scalar definitions, bit for bit.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "repro/arith.h"
#include "repro/elementwise.h"
#include "repro/matmul.h"

namespace pot_repro_test {

using namespace pot::repro;

// Distance in units in the last place between two finite floats of one sign.
int64_t ulps(float a, double exact) {
  const float e = static_cast<float>(exact);
  const int64_t ia = std::bit_cast<int32_t>(a), ie = std::bit_cast<int32_t>(e);
  return std::llabs(ia - ie);
}

TEST(Repro, ExpIsWithinTwoUlpOfTheTrueExp) {
  int64_t worst = 0;
  for (float x = -87.0f; x < 88.5f; x += 0.00731f) worst = std::max(worst, ulps(exp_f32(x), std::exp(double{x})));
  EXPECT_LE(worst, 2);
  // Results in the subnormal range: one rounding of the exact product.
  for (float x = -103.0f; x < -87.5f; x += 0.0173f) {
    const float got = exp_f32(x), want = static_cast<float>(std::exp(double{x}));
    EXPECT_LE(std::fabs(double{got} - double{want}), 0x1p-149) << x;
  }
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_f32(89.5f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_f32(88.8f), std::numeric_limits<float>::infinity());  // past FLT_MAX
  EXPECT_EQ(exp_f32(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_f32(-200.0f), 0.0f);
}

TEST(Repro, LogIsWithinTwoUlpOfTheTrueLog) {
  int64_t worst = 0;
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0x00000001u, 0x7f7fffffu);  // every positive finite float
  for (int i = 0; i < 200000; ++i) {
    const float x = std::bit_cast<float>(bits(rng));
    const double exact = std::log(double{x});
    worst = std::max(worst, ulps(log_f32(x), exact));
  }
  EXPECT_LE(worst, 2);
  // Near 1, where log is tiny, the bound is still relative.
  for (float x = 0.999f; x < 1.001f; x += 1e-6f)
    if (x != 1.0f) {
      EXPECT_LE(ulps(log_f32(x), std::log(double{x})), 2) << x;
    }
  EXPECT_EQ(log_f32(1.0f), 0.0f);
  EXPECT_EQ(log_f32(0.0f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(log_f32(-0.0f), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(log_f32(-1.0f)));
  EXPECT_TRUE(std::isnan(log_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(log_f32(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v) x = d(rng);
  return v;
}

// The sum order written out: lane j mod 32 in element order, then pairwise.
float defined_sum(const std::vector<float> &v) {
  std::vector<float> lanes(32, 0.0f);
  for (size_t j = 0; j < v.size(); ++j) lanes[j % 32] = lanes[j % 32] + v[j];
  for (size_t width = 16; width >= 1; width /= 2)
    for (size_t k = 0; k < width; ++k) lanes[k] = lanes[2 * k] + lanes[2 * k + 1];
  return lanes[0];
}

TEST(Repro, EverySumFollowsTheDefinedOrder) {
  for (size_t n : {0u, 1u, 31u, 32u, 33u, 1000u, 4097u}) {
    const std::vector<float> v = random_floats(n, static_cast<uint32_t>(n), 1e3f);
    const float want = defined_sum(v);
    EXPECT_EQ(std::bit_cast<uint32_t>(lane_sum(v.data(), static_cast<int64_t>(n))), std::bit_cast<uint32_t>(want));
    LaneSum s;
    for (float x : v) s.add(x);
    EXPECT_EQ(std::bit_cast<uint32_t>(s.total()), std::bit_cast<uint32_t>(want));
    std::vector<float> sq(v.size());
    for (size_t j = 0; j < v.size(); ++j) sq[j] = v[j] * v[j];
    EXPECT_EQ(std::bit_cast<uint32_t>(lane_sum_squares(v.data(), static_cast<int64_t>(n))),
              std::bit_cast<uint32_t>(defined_sum(sq)));
  }
  // Strided and by columns: each column summed in row order.
  const int64_t rows = 77, cols = 13;
  const std::vector<float> m = random_floats(static_cast<size_t>(rows * cols), 3);
  std::vector<float> sums(static_cast<size_t>(cols));
  column_sums(m.data(), rows, cols, cols, sums.data());
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<float> col;
    for (int64_t r = 0; r < rows; ++r) col.push_back(m[static_cast<size_t>(r * cols + c)]);
    EXPECT_EQ(std::bit_cast<uint32_t>(sums[static_cast<size_t>(c)]), std::bit_cast<uint32_t>(defined_sum(col)));
    EXPECT_EQ(std::bit_cast<uint32_t>(lane_sum(m.data() + c, rows, cols)), std::bit_cast<uint32_t>(defined_sum(col)));
  }
  // The order matters: a sequential sum of these gives other bits.
  const std::vector<float> v = random_floats(1000, 11, 1e3f);
  float seq = 0;
  for (float x : v) seq += x;
  EXPECT_NE(std::bit_cast<uint32_t>(seq), std::bit_cast<uint32_t>(lane_sum(v.data(), 1000)));
}

TEST(Repro, EveryMatmulPathAndRowSplitGivesTheChainsBits) {
  // k past one block of the vector paths (256) and not a multiple of it; n
  // past one panel with an edge; m with a partial block of rows.
  const int64_t m = 29, k = 601, n = 71;
  const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 1), b = random_floats(static_cast<size_t>(k * n), 2);
  std::vector<float> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) acc = std::fma(a[static_cast<size_t>(i * k + p)], b[static_cast<size_t>(p * n + j)], acc);
      want[static_cast<size_t>(i * n + j)] = acc;
    }
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    std::vector<float> c(static_cast<size_t>(m * n), -1.0f);
    matmul_rows(a.data(), k, b.data(), n, c.data(), n, k, n, 0, m, isa);
    EXPECT_EQ(0, std::memcmp(c.data(), want.data(), c.size() * sizeof(float)));
    // Threads take whole rows: any split gives the same bits.
    std::vector<float> split(static_cast<size_t>(m * n), -1.0f);
    matmul_rows(a.data(), k, b.data(), n, split.data(), n, k, n, 0, 3, isa);
    matmul_rows(a.data(), k, b.data(), n, split.data(), n, k, n, 3, 4, isa);
    matmul_rows(a.data(), k, b.data(), n, split.data(), n, k, n, 4, m, isa);
    EXPECT_EQ(0, std::memcmp(split.data(), want.data(), split.size() * sizeof(float)));
    // Transposed operands, read through their strides: at = a^T stored
    // [k][m], bt = b^T stored [n][k].
    std::vector<float> at(a.size()), bt(b.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) at[static_cast<size_t>(p * m + i)] = a[static_cast<size_t>(i * k + p)];
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bt[static_cast<size_t>(j * k + p)] = b[static_cast<size_t>(p * n + j)];
    std::vector<float> t(static_cast<size_t>(m * n), -1.0f);
    matmul_rows(Operand{at.data(), 1, m}, Operand{bt.data(), 1, k}, t.data(), n, k, n, 0, m, isa);
    EXPECT_EQ(0, std::memcmp(t.data(), want.data(), t.size() * sizeof(float)));
    std::fill(t.begin(), t.end(), -1.0f);
    matmul_rows(Operand{a.data(), k, 1}, Operand{bt.data(), 1, k}, t.data(), n, k, n, 0, 5, isa);
    matmul_rows(Operand{at.data(), 1, m}, Operand{b.data(), n, 1}, t.data(), n, k, n, 5, m, isa);
    EXPECT_EQ(0, std::memcmp(t.data(), want.data(), t.size() * sizeof(float)));
    // a read through two strides, neither of them 1 (every other element
    // of a wider array): packed like a transposed one.
    std::vector<float> sparse(static_cast<size_t>(2 * m * k), -7.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) sparse[static_cast<size_t>(i * 2 * k + 2 * p)] = a[static_cast<size_t>(i * k + p)];
    std::fill(t.begin(), t.end(), -1.0f);
    matmul_rows(Operand{sparse.data(), 2 * k, 2}, Operand{b.data(), n, 1}, t.data(), n, k, n, 0, m, isa);
    EXPECT_EQ(0, std::memcmp(t.data(), want.data(), t.size() * sizeof(float)));
    // Operands inside larger matrices (strides past the row length).
    std::vector<float> wide(static_cast<size_t>(m * (n + 5)), -1.0f);
    matmul_rows(a.data(), k, b.data(), n, wide.data(), n + 5, k, n, 0, m, isa);
    for (int64_t i = 0; i < m; ++i)
      EXPECT_EQ(0, std::memcmp(wide.data() + i * (n + 5), want.data() + i * n, static_cast<size_t>(n) * sizeof(float)));
  }
  // k = 0: every output is the chain's +0.0.
  std::vector<float> c(6, -1.0f);
  matmul_rows(a.data(), 0, b.data(), 3, c.data(), 3, 0, 3, 0, 2, best_isa());
  for (float x : c) EXPECT_EQ(std::bit_cast<uint32_t>(x), 0u);
}

// Inputs for the element-wise paths: every binade from subnormals to
// overflow of both signs, the branch points of erf (|x| / sqrt(2) at 0.5
// and 4), of exp (-104, 89) and of the vector paths (|x| = 8 for GELU, -87
// and 88 for exp) with their neighbours, zeros,
// infinities and NaN, in runs that leave partial vectors.
std::vector<float> elementwise_inputs() {
  std::vector<float> v;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int e = -149; e <= 127; e += 3)
    for (int r = 0; r < 24; ++r) {
      const float x = std::ldexp(mant(rng), e);
      v.push_back(x);
      v.push_back(-x);
    }
  std::uniform_real_distribution<float> mid(-9.0f, 9.0f), wide(-110.0f, 95.0f);
  for (int i = 0; i < 20000; ++i) v.push_back(mid(rng));
  for (int i = 0; i < 20000; ++i) v.push_back(wide(rng));
  for (float b : {0.5f * 1.41421356f, 4.0f * 1.41421356f, 8.0f, 0.0f, -87.0f, 88.0f, -104.0f, 89.0f}) {
    float lo = b, hi = b;
    for (int i = 0; i < 16; ++i) {
      lo = std::nextafter(lo, -1.0f);
      hi = std::nextafter(hi, 100.0f);
      for (float x : {lo, hi, -lo, -hi}) v.push_back(x);
    }
  }
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()})
    v.push_back(x);
  v.push_back(1.0f);  // an odd count: a partial vector at the end
  return v;
}

TEST(Repro, EveryElementwisePathGivesTheScalarDefinitionsBits) {
  const std::vector<float> x = elementwise_inputs();
  std::vector<float> g = x;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> gd(-3.0f, 3.0f);
  for (float &v : g) v = gd(rng);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> want(x.size()), want_bw(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    want[j] = gelu_f32(x[j]);
    want_bw[j] = gelu_backward_f32(g[j], x[j]);
  }
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    std::vector<float> out(x.size(), -1.0f);
    gelu_run(x.data(), n, out.data(), isa);
    for (size_t j = 0; j < x.size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(out[j]), std::bit_cast<uint32_t>(want[j])) << "gelu(" << x[j] << ")";
    gelu_backward_run(g.data(), x.data(), n, out.data(), isa);
    for (size_t j = 0; j < x.size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(out[j]), std::bit_cast<uint32_t>(want_bw[j]))
          << "gelu_backward(" << g[j] << ", " << x[j] << ")";
    exp_run(x.data(), n, out.data(), isa);
    for (size_t j = 0; j < x.size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(out[j]), std::bit_cast<uint32_t>(exp_f32(x[j]))) << "exp(" << x[j] << ")";
    // Offsets that start inside a vector.
    gelu_run(x.data() + 3, n - 3, out.data(), isa);
    for (size_t j = 0; j + 3 < x.size(); ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(out[j]), std::bit_cast<uint32_t>(want[j + 3])) << "gelu(" << x[j + 3] << ")";
  }
}

TEST(Repro, UniformRunsGiveEachDrawOfTheDefinition) {
  const uint64_t key = 0x0123456789abcdefull;
  // Counters whose low word carries into the high one inside a block of 8.
  const uint64_t carry = (uint64_t{1} << 34) - 12;
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    for (uint64_t first : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{4}, uint64_t{1} << 40, carry}) {
      for (int64_t n : {0, 1, 3, 4, 5, 17, 31, 32, 33, 35, 64, 100, 1000}) {
        std::vector<float> out(static_cast<size_t>(n) + 1, -1.0f);
        uniform_run(key, first, n, out.data(), isa);
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ(std::bit_cast<uint32_t>(out[static_cast<size_t>(j)]),
                    std::bit_cast<uint32_t>(uniform_f32(key, first + static_cast<uint64_t>(j))))
              << first << "+" << j;
        EXPECT_EQ(out[static_cast<size_t>(n)], -1.0f);  // nothing past n
      }
    }
  }
}

TEST(Repro, LogSoftmaxRowsAreCloseToTheTrueFunctionAndFollowTheirFormula) {
  const std::vector<float> x = random_floats(50, 5, 4.0f);
  std::vector<float> y(50), g(50), gx(50);
  log_softmax_row(x.data(), 50, y.data());
  double m = x[0];
  for (float v : x) m = std::max(m, double{v});
  double s = 0;
  for (float v : x) s += std::exp(double{v} - m);
  for (size_t j = 0; j < 50; ++j) EXPECT_NEAR(y[j], double{x[j]} - m - std::log(s), 1e-5);
  // The backward's formula, element by element.
  const std::vector<float> go = random_floats(50, 6);
  log_softmax_backward_row(go.data(), y.data(), 50, gx.data());
  const float sum = lane_sum(go.data(), 50);
  for (size_t j = 0; j < 50; ++j) EXPECT_EQ(gx[j], go[j] - exp_f32(y[j]) * sum);
  // A NaN anywhere in the row makes every output NaN.
  std::vector<float> bad = x;
  bad[7] = std::numeric_limits<float>::quiet_NaN();
  log_softmax_row(bad.data(), 50, y.data());
  for (float v : y) EXPECT_TRUE(std::isnan(v));
}

TEST(Repro, ErfAndGeluAreCloseToTheTrueFunctions) {
  double worst = 0;
  for (float x = -6.0f; x < 6.0f; x += 0.001f) worst = std::max(worst, std::fabs(double{erf_f32(x)} - std::erf(double{x})));
  EXPECT_LT(worst, 8e-7);
  // Below 0.5 in magnitude the odd polynomial keeps the relative error small.
  for (float x = 1e-30f; x < 0.5f; x *= 1.37f) EXPECT_LE(ulps(erf_f32(x), std::erf(double{x})), 4) << x;
  EXPECT_EQ(erf_f32(0.0f), 0.0f);
  EXPECT_EQ(erf_f32(-10.0f), -1.0f);
  EXPECT_TRUE(std::isnan(erf_f32(std::numeric_limits<float>::quiet_NaN())));
  for (float x = -5.0f; x < 5.0f; x += 0.01f) {
    const double xd = x, cdf = 0.5 * (1 + std::erf(xd / std::sqrt(2.0)));
    EXPECT_NEAR(gelu_f32(x), xd * cdf, 4e-6) << x;
    const double d = cdf + xd * std::exp(-0.5 * xd * xd) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(gelu_backward_f32(1.5f, x), 1.5 * d, 8e-6) << x;
  }
}

TEST(Repro, TanhAndSigmoidAreCloseToTheTrueFunctions) {
  int64_t worst_tanh = 0;
  for (float x = -12.0f; x < 12.0f; x += 0.0007f) {
    if (std::fabs(x) < 1e-30f) continue;
    worst_tanh = std::max(worst_tanh, ulps(tanh_f32(x), std::tanh(double{x})));
  }
  EXPECT_LE(worst_tanh, 4);
  for (float x = 1e-30f; x < 0.25f; x *= 1.3f) {
    EXPECT_LE(ulps(tanh_f32(x), std::tanh(double{x})), 2) << x;
    EXPECT_EQ(tanh_f32(-x), -tanh_f32(x));
  }
  double worst_sigmoid = 0;
  for (float x = -20.0f; x < 20.0f; x += 0.001f)
    worst_sigmoid = std::max(worst_sigmoid, std::fabs(double{sigmoid_f32(x)} - 1 / (1 + std::exp(-double{x}))));
  EXPECT_LT(worst_sigmoid, 2e-7);
  EXPECT_EQ(tanh_f32(50.0f), 1.0f);
  EXPECT_EQ(sigmoid_f32(-200.0f), 0.0f);
  EXPECT_EQ(sigmoid_f32(200.0f), 1.0f);
  EXPECT_TRUE(std::isnan(tanh_f32(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Repro, SoftmaxAndLayerNormRowsMatchTheirReferences) {
  const std::vector<float> x = random_floats(40, 8, 3.0f), w = random_floats(40, 9), b = random_floats(40, 10);
  std::vector<float> y(40), dx(40);
  softmax_row(x.data(), 40, y.data());
  double m = x[0], s = 0;
  for (float v : x) m = std::max(m, double{v});
  for (float v : x) s += std::exp(double{v} - m);
  for (size_t j = 0; j < 40; ++j) EXPECT_NEAR(y[j], std::exp(double{x[j]} - m) / s, 1e-6);
  float mean = 0, rstd = 0;
  layer_norm_row(x.data(), 40, w.data(), b.data(), 1e-5f, y.data(), &mean, &rstd);
  double mu = 0, var = 0;
  for (float v : x) mu += v;
  mu /= 40;
  for (float v : x) var += (v - mu) * (v - mu);
  var /= 40;
  const double r = 1 / std::sqrt(var + 1e-5);
  EXPECT_NEAR(mean, mu, 1e-6);
  EXPECT_NEAR(rstd, r, 1e-6 * r);
  for (size_t j = 0; j < 40; ++j) EXPECT_NEAR(y[j], (x[j] - mu) * r * w[j] + b[j], 2e-5);
  // The input gradient against the exact formula in binary64.
  const std::vector<float> g = random_floats(40, 12);
  layer_norm_backward_row(g.data(), x.data(), 40, w.data(), mean, rstd, dx.data());
  double a = 0, bb = 0;
  for (size_t j = 0; j < 40; ++j) {
    a += double{g[j]} * w[j];
    bb += double{g[j]} * w[j] * (x[j] - mu) * r;
  }
  for (size_t j = 0; j < 40; ++j)
    EXPECT_NEAR(dx[j], r * (double{g[j]} * w[j] - a / 40 - (x[j] - mu) * r * bb / 40), 2e-5);
}

TEST(Repro, PhiloxGivesThePublishedAnswers) {
  // Random123's known-answer vectors for philox4x32, 10 rounds.
  auto word = [](uint32_t lo, uint32_t hi) { return uint64_t{lo} | uint64_t{hi} << 32; };
  Philox4 r = philox4x32_10(0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = philox4x32_10(~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0});
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = philox4x32_10(word(0xa4093822u, 0x299f31d0u), word(0x243f6a88u, 0x85a308d3u), word(0x13198a2eu, 0x03707344u));
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
  // Uniform draws: in [0, 1), 24 bits each, about half below 0.5.
  int below = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const float u = uniform_f32(42, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    below += u < 0.5f;
  }
  EXPECT_NEAR(below, 5000, 200);
}

}  // namespace pot_repro_test
