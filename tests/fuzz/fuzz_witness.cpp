// A witness reveal against a commitment, all fields from the input.
#include <cstring>

#include "fuzz_common.h"
#include "witness/witness.h"

POT_FUZZ_TARGET({
  if (input.size() < 32 + 32 + 32 + 8 + 8 + 2) return 0;
  pot::hash::Digest commitment;
  std::memcpy(commitment.bytes.data(), input.data(), 32);
  pot::witness::WitnessValue v;
  std::memcpy(v.run_id.bytes.data(), input.data() + 32, 32);
  std::memcpy(v.replayed_state.bytes.data(), input.data() + 64, 32);
  std::memcpy(&v.step, input.data() + 96, 8);
  std::memcpy(&v.bucket, input.data() + 104, 8);
  const size_t salt_len = input[112] % 80;
  const pot::ByteView rest = input.subspan(113);
  if (rest.size() < salt_len) return 0;
  pot::witness::verify_reveal(commitment, v, rest.first(salt_len), rest.subspan(salt_len));
})
