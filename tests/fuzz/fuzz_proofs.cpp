// Inclusion and consistency proof verification: the first 17 bytes choose
// the kind, the index/sizes; the rest is the proof.
#include <cstring>

#include "fuzz_common.h"
#include "merkle/proof.h"

POT_FUZZ_TARGET({
  if (input.size() < 17) return 0;
  uint64_t a, b;
  std::memcpy(&a, input.data() + 1, 8);
  std::memcpy(&b, input.data() + 9, 8);
  const auto proof = pot::merkle::decode_proof(input.subspan(17));
  pot::hash::Digest x, y;
  x.bytes.fill(7);
  y.bytes.fill(9);
  if (input[0] & 1)
    pot::merkle::verify_inclusion(a, b, x.view(), proof, y.view());
  else
    pot::merkle::verify_consistency(a, b, x.view(), y.view(), proof);
})
