// Canonical execution spec bytes; a decoded spec must re-encode to them.
#include <cstdlib>

#include "commit/spec.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const auto s = pot::commit::ExecutionSpec::decode(input);
  const pot::Bytes again = s.encode();
  if (pot::ByteView(again).size() != input.size() || !std::equal(again.begin(), again.end(), input.begin()))
    std::abort();  // decode accepted bytes that are not canonical
})
