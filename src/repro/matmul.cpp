#include "repro/matmul.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pot::repro {

namespace {

// One output: the chain of the definition.
inline float dot_chain(const float *a, const float *b, int64_t ldb, int64_t k) {
  float acc = 0.0f;
  for (int64_t p = 0; p < k; ++p) acc = std::fma(a[p], b[p * ldb], acc);
  return acc;
}

void rows_scalar(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t k,
                 int64_t n, int64_t r0, int64_t r1, int64_t j0) {
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = j0; j < n; ++j) c[i * ldc + j] = dot_chain(a + i * lda, b + j, ldb, k);
}

#if defined(__x86_64__)
// 4 rows x 16 columns per block: 8 independent chains of 8 lanes, enough to
// keep two FMA units busy through their latency.
template <int Rows>
[[gnu::target("avx2,fma")]] inline void block_avx2(const float *a, int64_t lda, const float *b, int64_t ldb,
                                                   float *c, int64_t ldc, int64_t k, int64_t i, int64_t j) {
  __m256 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb + j), b1 = _mm256_loadu_ps(b + p * ldb + j + 8);
    for (int r = 0; r < Rows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + (i + r) * lda + p);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < Rows; ++r) {
    _mm256_storeu_ps(c + (i + r) * ldc + j, acc[r][0]);
    _mm256_storeu_ps(c + (i + r) * ldc + j + 8, acc[r][1]);
  }
}

[[gnu::target("avx2,fma")]] void rows_avx2(const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                                           int64_t ldc, int64_t k, int64_t n, int64_t r0, int64_t r1) {
  const int64_t wide = n - n % 16;
  int64_t i = r0;
  for (; i + 4 <= r1; i += 4)
    for (int64_t j = 0; j < wide; j += 16) block_avx2<4>(a, lda, b, ldb, c, ldc, k, i, j);
  for (; i < r1; ++i)
    for (int64_t j = 0; j < wide; j += 16) block_avx2<1>(a, lda, b, ldb, c, ldc, k, i, j);
  if (wide < n) rows_scalar(a, lda, b, ldb, c, ldc, k, n, r0, r1, wide);
}
#endif

}  // namespace

Isa best_isa() {
#if defined(__x86_64__)
  static const Isa isa = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Isa::kAvx2 : Isa::kScalar;
  return isa;
#else
  return Isa::kScalar;
#endif
}

const char *isa_name(Isa isa) { return isa == Isa::kAvx2 ? "avx2" : "scalar"; }

void matmul_rows(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t k,
                 int64_t n, int64_t row_begin, int64_t row_end, Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2 && best_isa() == Isa::kAvx2) return rows_avx2(a, lda, b, ldb, c, ldc, k, n, row_begin, row_end);
#else
  (void)isa;
#endif
  rows_scalar(a, lda, b, ldb, c, ldc, k, n, row_begin, row_end, 0);
}

}  // namespace pot::repro
