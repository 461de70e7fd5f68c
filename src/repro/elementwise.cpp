#include "repro/elementwise.h"

#include "repro/arith.h"
#include "repro/poly.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pot::repro {

namespace {

#if defined(__x86_64__)
// AVX2 without FMA: a target that cannot contract a multiply and an add, so
// each line is the scalar definition's operations, lane by lane.
#define POT_AVX2 [[gnu::target("avx2")]]

POT_AVX2 inline __m256 set1(float v) { return _mm256_set1_ps(v); }
POT_AVX2 inline __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
POT_AVX2 inline __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
POT_AVX2 inline __m256 sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
POT_AVX2 inline __m256 neg(__m256 a) { return _mm256_xor_ps(a, set1(-0.0f)); }
// where ? a : b, lane by lane.
POT_AVX2 inline __m256 select(__m256 where, __m256 a, __m256 b) { return _mm256_blendv_ps(b, a, where); }

// exp_f32 for lanes whose x is in [-104, 89] and whose 2^k is normal (k in
// [-126, 127]): the definition's reduction, polynomial and scaling.
POT_AVX2 __m256 exp8(__m256 x) {
  using namespace poly;
  const __m256 k = sub(add(mul(x, set1(kLog2e)), set1(kRoundShift)), set1(kRoundShift));
  const __m256 r = sub(sub(x, mul(k, set1(kLn2Hi))), mul(k, set1(kLn2Lo)));
  __m256 p = set1(kExp[0]);
  for (int i = 1; i < 8; ++i) p = add(mul(p, r), set1(kExp[i]));
  const __m256i e = _mm256_cvttps_epi32(k);  // k is an integer: exact
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
  return mul(p, scale);
}

// erf_f32 for lanes with |x| < 5.6 (so exp8's argument -(a*a) > -32): both
// branches computed, the definition's chosen per lane.
POT_AVX2 __m256 erf8(__m256 x) {
  using namespace poly;
  const __m256 a = _mm256_andnot_ps(set1(-0.0f), x);
  const __m256 z = mul(x, x);
  __m256 p = set1(kErfSmall[0]);
  for (int i = 1; i < 7; ++i) p = add(mul(p, z), set1(kErfSmall[i]));
  const __m256 small = mul(x, p);
  const __m256 t = _mm256_div_ps(set1(1.0f), add(set1(1.0f), mul(set1(kErfP), a)));
  __m256 q = set1(kErfA[0]);
  for (int i = 1; i < 5; ++i) q = add(mul(q, t), set1(kErfA[i]));
  __m256 r = sub(set1(1.0f), mul(mul(q, t), exp8(neg(mul(a, a)))));
  r = select(_mm256_cmp_ps(a, set1(4.0f), _CMP_GE_OQ), set1(1.0f), r);
  r = select(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ), neg(r), r);
  return select(_mm256_cmp_ps(a, set1(0.5f), _CMP_LT_OQ), small, r);
}

// Lanes where every intermediate of GELU and its backward is in the range
// exp8 and erf8 assume: |x| < 8 (x / sqrt(2) < 5.66, x^2 / 2 < 32); NaN is not.
POT_AVX2 inline bool regular8(__m256 x) {
  const __m256 a = _mm256_andnot_ps(set1(-0.0f), x);
  return _mm256_movemask_ps(_mm256_cmp_ps(a, set1(8.0f), _CMP_LT_OQ)) == 0xff;
}

// Lanes whose exp8 is exp_f32: x in [-87, 88] (k in [-126, 127], no
// special case of the definition); NaN is not.
POT_AVX2 inline bool exp_regular8(__m256 x) {
  const __m256 in = _mm256_and_ps(_mm256_cmp_ps(x, set1(-87.0f), _CMP_GE_OQ), _mm256_cmp_ps(x, set1(88.0f), _CMP_LE_OQ));
  return _mm256_movemask_ps(in) == 0xff;
}

POT_AVX2 void exp_avx2(const float *x, int64_t n, float *out) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    if (!exp_regular8(v)) {
      for (int64_t l = j; l < j + 8; ++l) out[l] = exp_f32(x[l]);
      continue;
    }
    _mm256_storeu_ps(out + j, exp8(v));
  }
  for (; j < n; ++j) out[j] = exp_f32(x[j]);
}

POT_AVX2 void gelu_avx2(const float *x, int64_t n, float *out) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    if (!regular8(v)) {
      for (int64_t l = j; l < j + 8; ++l) out[l] = gelu_f32(x[l]);
      continue;
    }
    const __m256 e = erf8(mul(v, set1(poly::kInvSqrt2)));
    _mm256_storeu_ps(out + j, mul(mul(v, set1(0.5f)), add(set1(1.0f), e)));
  }
  for (; j < n; ++j) out[j] = gelu_f32(x[j]);
}

POT_AVX2 void gelu_backward_avx2(const float *g, const float *x, int64_t n, float *out) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    if (!regular8(v)) {
      for (int64_t l = j; l < j + 8; ++l) out[l] = gelu_backward_f32(g[l], x[l]);
      continue;
    }
    const __m256 cdf = mul(set1(0.5f), add(set1(1.0f), erf8(mul(v, set1(poly::kInvSqrt2)))));
    const __m256 pdf = mul(exp8(mul(mul(v, v), set1(-0.5f))), set1(poly::kInvSqrt2Pi));
    _mm256_storeu_ps(out + j, mul(_mm256_loadu_ps(g + j), add(cdf, mul(v, pdf))));
  }
  for (; j < n; ++j) out[j] = gelu_backward_f32(g[j], x[j]);
}
// Philox4x32-10 of 8 consecutive counters side by side (counter_hi 0):
// 32 draws in the definition's order, each the scalar's.
POT_AVX2 inline void mul_hilo(__m256i a, __m256i m, __m256i &lo, __m256i &hi) {
  const __m256i even = _mm256_mul_epu32(a, m);                         // lanes 0, 2, 4, 6
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xaa);
}

POT_AVX2 void uniform_avx2(uint64_t key, uint64_t first, int64_t n, float *out) {
  int64_t j = 0;
  for (; j < n && (first + static_cast<uint64_t>(j)) % 4 != 0; ++j)
    out[j] = uniform_f32(key, first + static_cast<uint64_t>(j));
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m256 scale = set1(0x1p-24f);
  for (; j + 32 <= n; j += 32) {
    const uint64_t counter = (first + static_cast<uint64_t>(j)) / 4;
    alignas(32) uint32_t lo[8], hi[8];
    for (int l = 0; l < 8; ++l) {
      lo[l] = static_cast<uint32_t>(counter + static_cast<uint64_t>(l));
      hi[l] = static_cast<uint32_t>((counter + static_cast<uint64_t>(l)) >> 32);
    }
    __m256i c[4] = {_mm256_load_si256(reinterpret_cast<const __m256i *>(lo)),
                    _mm256_load_si256(reinterpret_cast<const __m256i *>(hi)), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      __m256i lo0, hi0, lo1, hi1;
      mul_hilo(c[0], m0, lo0, hi0);
      mul_hilo(c[2], m1, lo1, hi1);
      c[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c[1]), _mm256_set1_epi32(static_cast<int>(k0)));
      c[1] = lo1;
      c[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[3]), _mm256_set1_epi32(static_cast<int>(k1)));
      c[3] = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    alignas(32) float words[4][8];
    for (int w = 0; w < 4; ++w)  // the top 24 bits, exact in binary32, times 2^-24 (exact)
      _mm256_store_ps(words[w], mul(_mm256_cvtepi32_ps(_mm256_srli_epi32(c[w], 8)), scale));
    for (int l = 0; l < 8; ++l)
      for (int w = 0; w < 4; ++w) out[j + 4 * l + w] = words[w][l];
  }
  for (; j < n; ++j) out[j] = uniform_f32(key, first + static_cast<uint64_t>(j));
}
#undef POT_AVX2
#endif

}  // namespace

void exp_run(const float *x, int64_t n, float *out, Isa isa) {
#if defined(__x86_64__)
  if (isa != Isa::kScalar && runs(isa)) return exp_avx2(x, n, out);
#else
  (void)isa;
#endif
  for (int64_t j = 0; j < n; ++j) out[j] = exp_f32(x[j]);
}

void gelu_run(const float *x, int64_t n, float *out, Isa isa) {
#if defined(__x86_64__)
  if (isa != Isa::kScalar && runs(isa)) return gelu_avx2(x, n, out);
#else
  (void)isa;
#endif
  for (int64_t j = 0; j < n; ++j) out[j] = gelu_f32(x[j]);
}

void gelu_backward_run(const float *g, const float *x, int64_t n, float *out, Isa isa) {
#if defined(__x86_64__)
  if (isa != Isa::kScalar && runs(isa)) return gelu_backward_avx2(g, x, n, out);
#else
  (void)isa;
#endif
  for (int64_t j = 0; j < n; ++j) out[j] = gelu_backward_f32(g[j], x[j]);
}

void uniform_run(uint64_t key, uint64_t first, int64_t n, float *out, Isa isa) {
#if defined(__x86_64__)
  if (isa != Isa::kScalar && runs(isa)) return uniform_avx2(key, first, n, out);
#else
  (void)isa;
#endif
  int64_t j = 0;
  while (j < n) {
    const uint64_t i = first + static_cast<uint64_t>(j);
    const Philox4 r = philox4x32_10(key, i / 4, 0);
    for (uint64_t w = i % 4; w < 4 && j < n; ++w, ++j) out[j] = poly::uniform_of_word(r.v[w]);
  }
}

}  // namespace pot::repro
