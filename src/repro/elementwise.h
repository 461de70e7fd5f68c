// Element-wise runs of pot-repro/1 over contiguous arrays (docs/PROTOCOL.md
// 14.6): each output is the scalar definition of arith.h applied to its own
// inputs, so the bits do not depend on the path. The vector path computes 8
// independent elements per instruction with the same IEEE operations in the
// same order (no fused multiply-add: none is in the definitions); a block
// holding an input outside the range where every intermediate stays normal
// (|x| >= 8 for GELU, outside [-87, 88] for exp, NaN) is computed by the
// scalar definition.
#pragma once

#include <cstdint>

#include "repro/isa.h"

namespace pot::repro {

// out[j] = exp_f32(x[j]) for j in [0, n) (out may be x).
void exp_run(const float *x, int64_t n, float *out, Isa isa = best_isa());
// out[j] = gelu_f32(x[j]) for j in [0, n).
void gelu_run(const float *x, int64_t n, float *out, Isa isa = best_isa());
// out[j] = gelu_backward_f32(g[j], x[j]).
void gelu_backward_run(const float *g, const float *x, int64_t n, float *out, Isa isa = best_isa());
// out[j] = uniform_f32(key, first + j): one Philox4x32-10 block per four
// consecutive draws (the scalar definition computes a block per draw); the
// vector path runs 8 blocks side by side.
void uniform_run(uint64_t key, uint64_t first, int64_t n, float *out, Isa isa = best_isa());

}  // namespace pot::repro
