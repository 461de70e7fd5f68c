// Outcome-log leaves (docs/PROTOCOL.md sections 20.1 and 20.2), the records
// a light client decodes: challenge outcome records and dispute records,
// told apart by their tags. A decoded record must re-encode to the input.
#include <algorithm>
#include <cstdlib>

#include "fuzz_common.h"
#include "game/dispute_record.h"
#include "game/outcome.h"

namespace {

template <typename Record>
void round_trip(pot::ByteView input) {
  const auto record = Record::decode(input);
  const pot::Bytes again = record.encode();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  (void)record.to_json().dump();
}

}  // namespace

POT_FUZZ_TARGET({
  if (pot::game::is_dispute_record(input))
    round_trip<pot::game::DisputeRecord>(input);
  else
    round_trip<pot::game::Outcome>(input);
})
