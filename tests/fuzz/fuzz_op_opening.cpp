// A party's opening of a disputed node (docs/PROTOCOL.md section 22.3): the
// referee decodes it before anything else. Decoding what it encodes gives
// the same opening.
#include <cstdlib>

#include "dispute/op_referee.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const pot::dispute::NodeOpening o = pot::dispute::NodeOpening::decode(input);
  const pot::Bytes again = o.encode();
  if (pot::dispute::NodeOpening::decode(again).encode() != again) std::abort();
})
