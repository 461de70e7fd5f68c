// The code paths of pot-repro/1's kernels (src/repro): which instructions
// compute, never the bits. Every path of every kernel gives the scalar
// definition's outputs (tests/unit/test_repro.cpp forces each one the CPU
// runs).
#pragma once

#include <vector>

namespace pot::repro {

enum class Isa { kScalar, kAvx2, kAvx512 };
// The fastest path this CPU runs, and every path it runs (scalar first).
Isa best_isa();
std::vector<Isa> available_isas();
const char *isa_name(Isa isa);
// Whether this CPU runs `isa`'s instructions.
bool runs(Isa isa);

}  // namespace pot::repro
