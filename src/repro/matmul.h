// The matrix product of pot-repro/1 (docs/PROTOCOL.md 14.6): every output
// is one chain of fused multiply-adds over k in increasing order, from +0.0,
//
//     acc = +0.0;  for k = 0 .. K-1:  acc = fma(a[i][k], b[k][j], acc)
//
// so its bits depend on nothing but the operands: vector paths compute 8 or
// 16 outputs side by side (never one sum split across lanes) and may store a
// chain's accumulator between blocks of k (a binary32 value, as in the
// register), threads take whole rows.
#pragma once

#include <cstdint>

#include "repro/isa.h"

namespace pot::repro {

// A matrix in memory: element [i][j] at data[i * rows + j * cols] (the
// strides of a row and of a column, in elements; a transposed view swaps
// them), so no operand is copied to be contiguous first.
struct Operand {
  const float *data;
  int64_t rows;
  int64_t cols;
};

// c[i][j] = the chain over a [.][k] and b [k][n], for rows i in
// [row_begin, row_end) and every j in [0, n); c row-major with row stride
// ldc. A path this CPU lacks computes as the scalar one (the same bits).
void matmul_rows(const Operand &a, const Operand &b, float *c, int64_t ldc, int64_t k, int64_t n,
                 int64_t row_begin, int64_t row_end, Isa isa);

// The same for row-major operands: c[i][j] for rows i in [row_begin, row_end) and every j in [0, n), from
// row-major a (k contiguous, row stride lda) and b ([k][n], row stride ldb);
// c row-major with row stride ldc. A path this CPU lacks computes as the
// scalar one (the same bits).
void matmul_rows(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t k,
                 int64_t n, int64_t row_begin, int64_t row_end, Isa isa);

}  // namespace pot::repro
