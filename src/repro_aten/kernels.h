// The pot-repro/1 kernels of ATen operators (docs/PROTOCOL.md 14.6). Each
// computes the arithmetic's definition on a thread inside a Scope (gate.h)
// for binary32 operands, ATen's own CPU kernel otherwise: integer and bool
// operands (exact everywhere) always, and other floating-point types after
// noting a violation (the arithmetic does not define them).
#pragma once

#include <string>
#include <vector>

#include <torch/library.h>

namespace pot::repro_aten {

// Registers every kernel into `lib` (an IMPL library of aten at the CPU
// key) and appends each operator's name.overload to `names`.
void register_kernels(torch::Library &lib, std::vector<std::string> &names);

}  // namespace pot::repro_aten
