#include "repro/arith.h"

#include "repro/elementwise.h"
#include "repro/poly.h"

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace pot::repro {

namespace {

using poly::kLn2Hi;
using poly::kLn2Lo;
using poly::kLog2e;
using poly::kRoundShift;

// The largest of a row's values, NaN if any is NaN (-inf for none).
float row_max(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j)
    if (std::isnan(x[j]) || x[j] > m) {
      m = x[j];
      if (std::isnan(m)) break;
    }
  return m;
}

// 2^e as a binary32 for e in [-126, 127].
float pow2(int e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); }

}  // namespace

float exp_f32(float x) {
  if (std::isnan(x)) return x;
  if (x > 89.0f) return std::numeric_limits<float>::infinity();
  if (x < -104.0f) return 0.0f;
  const float k = (x * kLog2e + kRoundShift) - kRoundShift;
  const float r = (x - k * kLn2Hi) - k * kLn2Lo;
  // Taylor coefficients 1/n! rounded to binary32, Horner from the top.
  float p = poly::kExp[0];
  for (int i = 1; i < 8; ++i) p = p * r + poly::kExp[i];
  const int e = static_cast<int>(k);
  if (e > 127) return (p * pow2(127)) * pow2(e - 127);
  if (e < -126) return (p * pow2(e + 64)) * pow2(-64);
  return p * pow2(e);
}

float log_f32(float x) {
  if (std::isnan(x)) return x;
  if (x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (x == 0.0f) return -std::numeric_limits<float>::infinity();
  if (std::isinf(x)) return x;
  int e = 0;
  if (x < 0x1p-126f) {  // subnormal: scaled exactly into the normal range
    x = x * 0x1p23f;
    e = -23;
  }
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  e += static_cast<int>(bits >> 23) - 127;
  float m = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 0x1.6a09e6p0f) {  // above sqrt(2): m / 2 in [sqrt(1/2), 1)
    m = m * 0.5f;
    e += 1;
  }
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  // log(m) = 2 atanh(s) = 2s + s * R(z), R the series' 2/(2n+1) terms.
  float q = 0x1.745d18p-3f;   // 2/11
  q = q * z + 0x1.c71c72p-3f; // 2/9
  q = q * z + 0x1.24924ap-2f; // 2/7
  q = q * z + 0x1.99999ap-2f; // 2/5
  q = q * z + 0x1.555556p-1f; // 2/3
  const float lm = (s + s) + s * (q * z);
  const float ef = static_cast<float>(e);
  return ef * kLn2Hi + (ef * kLn2Lo + lm);
}

float erf_f32(float x) {
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  float r;
  if (a < 0.5f) {
    // erf(x) = 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320 + x^13/9360)
    const float z = x * x;
    float p = poly::kErfSmall[0];
    for (int i = 1; i < 7; ++i) p = p * z + poly::kErfSmall[i];
    return x * p;
  }
  if (a >= 4.0f) {
    r = 1.0f;
  } else {
    // 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-a^2), t = 1 / (1 + p a)
    const float t = 1.0f / (1.0f + poly::kErfP * a);
    float q = poly::kErfA[0];
    for (int i = 1; i < 5; ++i) q = q * t + poly::kErfA[i];
    r = 1.0f - (q * t) * exp_f32(-(a * a));
  }
  return x < 0.0f ? -r : r;
}

float tanh_f32(float x) {
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  if (a < 0.25f) {
    // x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 - 1382x^11/155925
    const float z = x * x;
    float p = -0x1.226e36p-7f;
    p = p * z + 0x1.664f48p-6f;
    p = p * z + -0x1.ba1ba2p-5f;
    p = p * z + 0x1.111112p-3f;
    p = p * z + -0x1.555556p-2f;
    return x + x * (p * z);
  }
  const float r = a >= 10.0f ? 1.0f : 1.0f - 2.0f / (exp_f32(a + a) + 1.0f);
  return x < 0.0f ? -r : r;
}

float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

void softmax_row(const float *x, int64_t n, float *out) {
  const float m = row_max(x, n);
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] - m;
  exp_run(out, n, out);
  const float total = lane_sum(out, n);
  for (int64_t j = 0; j < n; ++j) out[j] = out[j] / total;
}

void softmax_backward_row(const float *g, const float *y, int64_t n, float *out) {
  LaneSum s;
  for (int64_t j = 0; j < n; ++j) s.add(g[j] * y[j]);
  const float dot = s.total();
  for (int64_t j = 0; j < n; ++j) out[j] = y[j] * (g[j] - dot);
}

void layer_norm_row(const float *x, int64_t n, const float *w, const float *b, float eps, float *out, float *mean,
                    float *rstd) {
  const float count = static_cast<float>(n);
  const float mu = lane_sum(x, n) / count;
  LaneSum sq;
  for (int64_t j = 0; j < n; ++j) {
    const float d = x[j] - mu;
    sq.add(d * d);
  }
  const float r = 1.0f / std::sqrt(sq.total() / count + eps);
  for (int64_t j = 0; j < n; ++j) {
    float y = (x[j] - mu) * r;
    if (w) y = y * w[j];
    if (b) y = y + b[j];
    out[j] = y;
  }
  *mean = mu;
  *rstd = r;
}

void layer_norm_backward_row(const float *g, const float *x, int64_t n, const float *w, float mean, float rstd,
                             float *out) {
  LaneSum a, b;
  for (int64_t j = 0; j < n; ++j) {
    const float gw = w ? g[j] * w[j] : g[j];
    a.add(gw);
    b.add(gw * ((x[j] - mean) * rstd));
  }
  const float count = static_cast<float>(n);
  const float c1 = a.total() / count, c2 = b.total() / count;
  for (int64_t j = 0; j < n; ++j) {
    const float gw = w ? g[j] * w[j] : g[j];
    const float xh = (x[j] - mean) * rstd;
    out[j] = rstd * ((gw - c1) - xh * c2);
  }
}

using poly::kInvSqrt2;
using poly::kInvSqrt2Pi;

float gelu_f32(float x) { return (x * 0.5f) * (1.0f + erf_f32(x * kInvSqrt2)); }

float gelu_backward_f32(float g, float x) {
  const float cdf = 0.5f * (1.0f + erf_f32(x * kInvSqrt2));
  const float pdf = exp_f32((x * x) * -0.5f) * kInvSqrt2Pi;
  return g * (cdf + x * pdf);
}

Philox4 philox4x32_10(uint64_t key, uint64_t counter_lo, uint64_t counter_hi) {
  uint32_t c[4] = {static_cast<uint32_t>(counter_lo), static_cast<uint32_t>(counter_lo >> 32),
                   static_cast<uint32_t>(counter_hi), static_cast<uint32_t>(counter_hi >> 32)};
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c[0], c[1], c[2], c[3]}};
}

float uniform_f32(uint64_t key, uint64_t i) {
  const Philox4 r = philox4x32_10(key, i / 4, 0);
  return poly::uniform_of_word(r.v[i % 4]);
}

float pairwise(const float *lanes) {
  float level[kLanes];
  for (size_t i = 0; i < kLanes; ++i) level[i] = lanes[i];
  for (size_t width = kLanes / 2; width >= 1; width /= 2)
    for (size_t k = 0; k < width; ++k) level[k] = level[2 * k] + level[2 * k + 1];
  return level[0];
}

float LaneSum::total() const { return pairwise(lanes_); }

float lane_sum(const float *x, int64_t n, int64_t stride) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  if (stride == 1) {
    for (; j + static_cast<int64_t>(kLanes) <= n; j += kLanes)
      for (size_t l = 0; l < kLanes; ++l) lanes[l] += x[j + static_cast<int64_t>(l)];
  }
  for (; j < n; ++j) lanes[static_cast<size_t>(j) % kLanes] += x[j * stride];
  return pairwise(lanes);
}

float lane_sum_squares(const float *x, int64_t n, int64_t stride) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  if (stride == 1) {
    for (; j + static_cast<int64_t>(kLanes) <= n; j += kLanes)
      for (size_t l = 0; l < kLanes; ++l) {
        const float v = x[j + static_cast<int64_t>(l)];
        lanes[l] += v * v;
      }
  }
  for (; j < n; ++j) {
    const float v = x[j * stride];
    lanes[static_cast<size_t>(j) % kLanes] += v * v;
  }
  return pairwise(lanes);
}

void column_sums(const float *x, int64_t rows, int64_t cols, int64_t ld, float *out) {
  // lanes[l * cols + c]: column c's lane l. The loop over c is free of
  // dependences, so it vectorizes across columns without touching a
  // column's order.
  std::vector<float> lanes(kLanes * static_cast<size_t>(cols), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float *lane = lanes.data() + static_cast<size_t>(r % static_cast<int64_t>(kLanes)) * static_cast<size_t>(cols);
    const float *row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) lane[c] += row[c];
  }
  float column[kLanes];
  for (int64_t c = 0; c < cols; ++c) {
    for (size_t l = 0; l < kLanes; ++l) column[l] = lanes[l * static_cast<size_t>(cols) + static_cast<size_t>(c)];
    out[c] = pairwise(column);
  }
}

void log_softmax_row(const float *x, int64_t n, float *out) {
  const float m = row_max(x, n);
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] - m;
  exp_run(out, n, out);  // out holds the exponentials until the last loop
  const float log_s = log_f32(lane_sum(out, n));
  for (int64_t j = 0; j < n; ++j) out[j] = (x[j] - m) - log_s;
}

void log_softmax_backward_row(const float *g, const float *y, int64_t n, float *out) {
  const float sum = lane_sum(g, n);
  exp_run(y, n, out);  // out may not be g: it holds exp(y) until the loop below
  for (int64_t j = 0; j < n; ++j) out[j] = g[j] - out[j] * sum;
}

#if defined(__x86_64__) || defined(__i386__)
// MXCSR: FTZ (bit 15), DAZ (bit 6), rounding control (bits 13-14).
FpEnvironment::FpEnvironment() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ & ~(0x8000u | 0x0040u | 0x6000u)); }
FpEnvironment::~FpEnvironment() { _mm_setcsr(saved_); }
#else
FpEnvironment::FpEnvironment() = default;
FpEnvironment::~FpEnvironment() = default;
#endif

}  // namespace pot::repro
