// The reproducible arithmetic pot-repro/1 (docs/PROTOCOL.md 14.6): the
// scalar definitions every pot-repro kernel computes with, so that a step
// gives the same bits on any IEEE-754 CPU, at any thread count and vector
// width. Core code: no LibTorch; the kernels registered into ATen
// (src/repro_aten) call these on raw arrays.
//
// Every operation here is binary32 rounded to nearest-even, one rounding per
// written operation; nothing is contracted into a fused multiply-add (the
// project builds with -ffp-contract=off) except where a definition says fma.
// Subnormal inputs and results are IEEE gradual underflow: the kernels run
// with the flush-to-zero and denormals-are-zero modes off (FpEnvironment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pot::repro {

// The arithmetic's name in the execution spec (field 20).
inline constexpr std::string_view kArithmetic = "pot-repro/1";

// exp and log of binary32 by the fixed polynomials of PROTOCOL 14.6 (not
// the platform's libm): within 2 ulp of the true value, and the same bits
// everywhere.
float exp_f32(float x);
float log_f32(float x);
// erf of binary32 (PROTOCOL 14.6): an odd Taylor polynomial below 0.5 in
// magnitude, Abramowitz and Stegun's 7.1.26 form with pot's exp above;
// within 8e-7 of the true value.
float erf_f32(float x);

// The sum order of pot-repro/1 (PROTOCOL 14.6, as the state statistics of
// 5.2 but in binary32): element j of the n summed (in the order the
// operator defines) adds to lane j mod 32; each lane starts at +0.0 and adds
// in element order; the 32 lanes are then added pairwise, (l0 + l1), (l2 +
// l3), ..., down to one value.
inline constexpr size_t kLanes = 32;

// A sum fed one element at a time, in order.
class LaneSum {
 public:
  void add(float x) {
    lanes_[static_cast<size_t>(n_ % kLanes)] += x;
    ++n_;
  }
  float total() const;

 private:
  float lanes_[kLanes] = {};
  uint64_t n_ = 0;
};

// The pairwise tail of the order: lanes[0..32) down to one value.
float pairwise(const float *lanes);
// sum_j x[j * stride] for j in [0, n).
float lane_sum(const float *x, int64_t n, int64_t stride = 1);
// sum_j (x * x) for x = x[j * stride] (each square rounded).
float lane_sum_squares(const float *x, int64_t n, int64_t stride = 1);
// The column sums of a row-major [rows, cols] array (row stride ld): out[c]
// is the sum of column c in row order, every column by the order above.
void column_sums(const float *x, int64_t rows, int64_t cols, int64_t ld, float *out);

// log_softmax of one row of n values (PROTOCOL 14.6): m the maximum (NaN if
// any is NaN), s the sum of exp(x_j - m), out_j = (x_j - m) - log(s). out
// must not overlap x (it holds the exponentials first).
void log_softmax_row(const float *x, int64_t n, float *out);
// Its backward: out_j = g_j - exp(y_j) * sum(g), y the forward's output;
// out must not overlap g or y.
void log_softmax_backward_row(const float *g, const float *y, int64_t n, float *out);

// softmax of one row: e_j = exp(x_j - m), s their sum, out_j = e_j / s.
void softmax_row(const float *x, int64_t n, float *out);
// Its backward: out_j = y_j * (g_j - sum(g * y)).
void softmax_backward_row(const float *g, const float *y, int64_t n, float *out);

// Layer normalization of one row of n values (PROTOCOL 14.6): mean = sum(x)
// / n, var = sum((x - mean)^2) / n, rstd = 1 / sqrt(var + eps), out_j =
// ((x_j - mean) * rstd) * w_j + b_j (w, b may be null: 1 and 0).
void layer_norm_row(const float *x, int64_t n, const float *w, const float *b, float eps, float *out, float *mean,
                    float *rstd);
// Its input gradient from the forward's mean and rstd: with xh_j = (x_j -
// mean) * rstd, gw_j = g_j * w_j, A = sum(gw), B = sum(gw * xh):
// out_j = rstd * ((gw_j - A / n) - xh_j * (B / n)).
void layer_norm_backward_row(const float *g, const float *x, int64_t n, const float *w, float mean, float rstd,
                             float *out);

// tanh and the logistic sigmoid (PROTOCOL 14.6): tanh by its Taylor
// polynomial below 0.25 in magnitude, 1 - 2 / (exp(2|x|) + 1) above, 1 from
// 10; sigmoid(x) = 1 / (1 + exp(-x)).
float tanh_f32(float x);
float sigmoid_f32(float x);

// GELU (the erf form) and its backward (PROTOCOL 14.6).
float gelu_f32(float x);
float gelu_backward_f32(float g, float x);

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", 2011): four 32-bit words of the 128-bit counter (lo, hi) under a
// 64-bit key.
struct Philox4 {
  uint32_t v[4];
};
Philox4 philox4x32_10(uint64_t key, uint64_t counter_lo, uint64_t counter_hi);
// The uniform draw of element i of a call keyed by `key`: word i mod 4 of
// philox(key, i / 4, 0), its top 24 bits times 2^-24, in [0, 1).
float uniform_f32(uint64_t key, uint64_t i);

// Flush-to-zero and denormals-are-zero off and rounding to nearest for the
// calling thread while it lives (every pot-repro kernel, on every thread it
// runs on); the previous mode is restored after.
class FpEnvironment {
 public:
  FpEnvironment();
  ~FpEnvironment();
  FpEnvironment(const FpEnvironment &) = delete;
  FpEnvironment &operator=(const FpEnvironment &) = delete;

 private:
  unsigned saved_ = 0;
};

}  // namespace pot::repro
