// Canonical execution spec bytes; a decoded spec must re-encode to them, and
// its learning-rate schedule must evaluate without undefined behaviour: the
// first 64 rates, and one window further on, each finite and >= +0 or a
// pot::Error (a rate that overflows is refused, never returned).
#include <cmath>
#include <cstdlib>

#include "spec/spec.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const auto s = pot::spec::ExecutionSpec::decode(input);
  const pot::Bytes again = s.encode();
  if (pot::ByteView(again).size() != input.size() || !std::equal(again.begin(), again.end(), input.begin()))
    std::abort();  // decode accepted bytes that are not canonical
  double rates[64];
  for (uint64_t first : {uint64_t{1}, uint64_t{1} + (input.size() % 256) * 17}) {
    pot::spec::learning_rates(s.lr_schedule, s.optimizer.lr, first, 64, rates);
    for (double r : rates)
      if (!std::isfinite(r) || std::signbit(r)) std::abort();  // a rate outside the rule was returned
  }
})
