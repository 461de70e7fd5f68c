#include "repro/arith.h"

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace pot::repro {

namespace {

// ln 2 split in two (PROTOCOL 14.6): kLn2Hi has 17 significant bits, so
// k * kLn2Hi is exact for every |k| <= 150 the functions use.
constexpr float kLn2Hi = 0x1.62e4p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kLog2e = 0x1.715476p0f;
// Adding and subtracting 1.5 * 2^23 rounds |t| < 2^22 to the nearest
// integer, ties to even, with two IEEE additions.
constexpr float kRoundShift = 0x1.8p23f;

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
  float p = 0x1.a01a02p-13f;        // 1/5040
  p = p * r + 0x1.6c16c2p-10f;      // 1/720
  p = p * r + 0x1.111112p-7f;       // 1/120
  p = p * r + 0x1.555556p-5f;       // 1/24
  p = p * r + 0x1.555556p-3f;       // 1/6
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
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
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j)
    if (std::isnan(x[j]) || x[j] > m) {
      m = x[j];
      if (std::isnan(m)) break;
    }
  LaneSum s;
  for (int64_t j = 0; j < n; ++j) s.add(exp_f32(x[j] - m));
  const float log_s = log_f32(s.total());
  for (int64_t j = 0; j < n; ++j) out[j] = (x[j] - m) - log_s;
}

void log_softmax_backward_row(const float *g, const float *y, int64_t n, float *out) {
  const float sum = lane_sum(g, n);
  for (int64_t j = 0; j < n; ++j) out[j] = g[j] - exp_f32(y[j]) * sum;
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
