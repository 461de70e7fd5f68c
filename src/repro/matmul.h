// The matrix product of pot-repro/1 (docs/PROTOCOL.md 14.6): every output
// is one chain of fused multiply-adds over k in increasing order, from +0.0,
//
//     acc = +0.0;  for k = 0 .. K-1:  acc = fma(a[i][k], b[k][j], acc)
//
// so its bits depend on nothing but the operands: vector paths compute 8 or
// 16 outputs side by side (never one sum split across lanes), threads take
// whole rows.
#pragma once

#include <cstdint>

namespace pot::repro {

// Which code computes (never the bits): every path gives the same outputs.
enum class Isa { kScalar, kAvx2 };
// The fastest path this CPU runs.
Isa best_isa();
const char *isa_name(Isa isa);

// c[i][j] for rows i in [row_begin, row_end) and every j in [0, n), from
// row-major a (k contiguous, row stride lda) and b ([k][n], row stride ldb);
// c row-major with row stride ldc.
void matmul_rows(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t k,
                 int64_t n, int64_t row_begin, int64_t row_end, Isa isa);

}  // namespace pot::repro
