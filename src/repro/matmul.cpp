#include "repro/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pot::repro {

namespace {

// One output: the chain of the definition.
inline float dot_chain(const float *a, int64_t sa, const float *b, int64_t sb, int64_t k) {
  float acc = 0.0f;
  for (int64_t p = 0; p < k; ++p) acc = std::fma(a[p * sa], b[p * sb], acc);
  return acc;
}

void rows_scalar(const Operand &a, const Operand &b, float *c, int64_t ldc, int64_t k, int64_t n, int64_t r0,
                 int64_t r1) {
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = dot_chain(a.data + i * a.rows, a.cols, b.data + j * b.cols, b.rows, k);
}

#if defined(__x86_64__)
// The vector paths are blocked for the caches, not reordered: k is cut
// into blocks of kKc, and a chain that continues into the next block
// reloads its accumulator from c, where the previous block stored it as a
// binary32 value: the same value the register held, so the chain is the
// definition's. Each block of b is packed into panels of kWidth columns
// (the vector width times two, zeros past n: their chains are computed and
// dropped), read contiguously by a micro-kernel of up to Rows rows that
// keeps Rows x 2 vector accumulators in registers.
constexpr int64_t kKc = 256;

// b[p][j] of one k-block into panels [n / width][kc][width].
void pack(const Operand &b, int64_t kc, int64_t n, int64_t width, float *out) {
  for (int64_t j = 0; j < n; j += width) {
    const int64_t cols = std::min(width, n - j);
    for (int64_t p = 0; p < kc; ++p, out += width) {
      const float *row = b.data + p * b.rows + j * b.cols;
      if (b.cols == 1) {
        std::memcpy(out, row, static_cast<size_t>(cols) * sizeof(float));
      } else {
        for (int64_t q = 0; q < cols; ++q) out[q] = row[q * b.cols];
      }
      std::fill(out + cols, out + width, 0.0f);
    }
  }
}

// b's columns are its rows (b.rows == 1, a transposed matrix): each panel
// gathered column by column, reading b in its storage order.
void pack_transposed(const Operand &b, int64_t kc, int64_t n, int64_t width, float *out) {
  for (int64_t j = 0; j < n; j += width) {
    const int64_t cols = std::min(width, n - j);
    for (int64_t q = 0; q < cols; ++q) {
      const float *col = b.data + (j + q) * b.cols;
      for (int64_t p = 0; p < kc; ++p) out[p * width + q] = col[p];
    }
    for (int64_t p = 0; p < kc; ++p) std::fill(out + p * width + cols, out + (p + 1) * width, 0.0f);
    out += kc * width;
  }
}

// rows x kc of an a whose k is not contiguous (a transposed matrix: a.cols
// is its row stride) into [kc][rows]: the micro-kernel then reads the Rows
// broadcasts of a step from one cache line, not from a line in another page
// per step (those lines, a power-of-two stride apart, also share one cache
// set). An a with contiguous k is read in place: packing it costs more
// than its Rows row streams do (measured on the shapes of the 5.3M GPT).
void pack_a(const Operand &a, int64_t i, int64_t pc, int64_t rows, int64_t kc, float *out) {
  const float *base = a.data + i * a.rows + pc * a.cols;
  if (a.rows == 1) {
    for (int64_t p = 0; p < kc; ++p)
      std::memcpy(out + p * rows, base + p * a.cols, static_cast<size_t>(rows) * sizeof(float));
    return;
  }
  for (int64_t p = 0; p < kc; ++p)
    for (int64_t r = 0; r < rows; ++r) out[p * rows + r] = base[r * a.rows + p * a.cols];
}

// One block: c[Rows][width] (row stride ldc), continued from c unless
// first, over kc steps of a (row stride lda) and a packed panel.
template <int Rows>
[[gnu::target("avx2,fma")]] void kernel_avx2(const float *a, int64_t lda, int64_t sa, const float *panel, int64_t kc,
                                             float *c, int64_t ldc, bool first) {
  __m256 acc[Rows][2];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8 * v);
  for (int64_t p = 0; p < kc; ++p, panel += 16) {
    const __m256 b0 = _mm256_loadu_ps(panel), b1 = _mm256_loadu_ps(panel + 8);
#pragma GCC unroll 12
    for (int r = 0; r < Rows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p * sa);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

template <int Rows>
[[gnu::target("avx512f")]] void kernel_avx512(const float *a, int64_t lda, int64_t sa, const float *panel, int64_t kc,
                                              float *c, int64_t ldc, bool first) {
  __m512 acc[Rows][2];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16 * v);
  for (int64_t p = 0; p < kc; ++p, panel += 32) {
    const __m512 b0 = _mm512_loadu_ps(panel), b1 = _mm512_loadu_ps(panel + 16);
#pragma GCC unroll 12
    for (int r = 0; r < Rows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p * sa]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < 2; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

using Kernel = void (*)(const float *, int64_t, int64_t, const float *, int64_t, float *, int64_t, bool);

template <template <int> class K, int... R>
struct Table {
  static constexpr Kernel at[] = {K<R + 1>::run...};
};
template <int Rows>
struct Avx2 {
  static void run(const float *a, int64_t lda, int64_t sa, const float *p, int64_t kc, float *c, int64_t ldc,
                  bool first) {
    kernel_avx2<Rows>(a, lda, sa, p, kc, c, ldc, first);
  }
};
template <int Rows>
struct Avx512 {
  static void run(const float *a, int64_t lda, int64_t sa, const float *p, int64_t kc, float *c, int64_t ldc,
                  bool first) {
    kernel_avx512<Rows>(a, lda, sa, p, kc, c, ldc, first);
  }
};

struct Path {
  int64_t rows;   // the micro-kernel's most rows
  int64_t width;  // a panel's columns
  const Kernel *kernels;  // [rows - 1]
};

// Rows x width: 6 x 16 (12 of AVX2's 16 registers accumulate), 12 x 32 (24
// of AVX-512's 32).
const Path &path_of(Isa isa) {
  static const Path avx2{6, 16, Table<Avx2, 0, 1, 2, 3, 4, 5>::at};
  static const Path avx512{12, 32, Table<Avx512, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11>::at};
  return isa == Isa::kAvx512 ? avx512 : avx2;
}

void rows_blocked(const Operand &a, const Operand &b, float *c, int64_t ldc, int64_t k, int64_t n, int64_t r0,
                  int64_t r1, const Path &path) {
  const int64_t width = path.width, panels = (n + width - 1) / width;
  thread_local std::vector<float> packed, packed_a;
  packed.resize(static_cast<size_t>(std::min(k, kKc) * panels * width));
  packed_a.resize(static_cast<size_t>(std::min(k, kKc) * path.rows));
  float edge[12 * 32];  // the last panel's block when n is not a multiple of width
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    const bool first = pc == 0;
    const Operand block{b.data + pc * b.rows, b.rows, b.cols};
    if (b.rows == 1 && b.cols != 1) {
      pack_transposed(block, kc, n, width, packed.data());
    } else {
      pack(block, kc, n, width, packed.data());
    }
    for (int64_t i = r0; i < r1; i += path.rows) {
      const int64_t rows = std::min(path.rows, r1 - i);
      const Kernel kernel = path.kernels[rows - 1];
      const bool in_place = a.cols == 1;
      if (!in_place) pack_a(a, i, pc, rows, kc, packed_a.data());
      const float *ai = in_place ? a.data + i * a.rows + pc : packed_a.data();
      const int64_t lda = in_place ? a.rows : 1, sa = in_place ? 1 : rows;
      for (int64_t q = 0; q < panels; ++q) {
        const int64_t j = q * width, cols = std::min(width, n - j);
        const float *panel = packed.data() + q * kc * width;
        float *ci = c + i * ldc + j;
        if (cols == width) {
          kernel(ai, lda, sa, panel, kc, ci, ldc, first);
          continue;
        }
        for (int64_t r = 0; r < rows && !first; ++r)
          std::memcpy(edge + r * width, ci + r * ldc, static_cast<size_t>(cols) * sizeof(float));
        kernel(ai, lda, sa, panel, kc, edge, width, first);
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(ci + r * ldc, edge + r * width, static_cast<size_t>(cols) * sizeof(float));
      }
    }
  }
}
#endif

}  // namespace

void matmul_rows(const Operand &a, const Operand &b, float *c, int64_t ldc, int64_t k, int64_t n,
                 int64_t row_begin, int64_t row_end, Isa isa) {
  if (row_begin >= row_end || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = row_begin; i < row_end; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
#if defined(__x86_64__)
  if (isa != Isa::kScalar && runs(isa)) return rows_blocked(a, b, c, ldc, k, n, row_begin, row_end, path_of(isa));
#else
  (void)isa;
#endif
  rows_scalar(a, b, c, ldc, k, n, row_begin, row_end);
}

void matmul_rows(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t k,
                 int64_t n, int64_t row_begin, int64_t row_end, Isa isa) {
  matmul_rows(Operand{a, lda, 1}, Operand{b, ldb, 1}, c, ldc, k, n, row_begin, row_end, isa);
}

}  // namespace pot::repro
