#include "repro/isa.h"

namespace pot::repro {

Isa best_isa() {
#if defined(__x86_64__)
  static const Isa isa = __builtin_cpu_supports("avx512f")                                       ? Isa::kAvx512
                         : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Isa::kAvx2
                                                                                           : Isa::kScalar;
  return isa;
#else
  return Isa::kScalar;
#endif
}

bool runs(Isa isa) {
  const Isa best = best_isa();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return best != Isa::kScalar;
    case Isa::kAvx512: return best == Isa::kAvx512;
  }
  return false;
}

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (runs(isa)) out.push_back(isa);
  return out;
}

const char *isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kScalar: break;
  }
  return "scalar";
}

}  // namespace pot::repro
