// Saved Merkle log bytes (pot_log_load): load must refuse anything save
// could not have written, and save(load(b)) == b.
#include <algorithm>
#include <cstdlib>

#include "fuzz_common.h"
#include "merkle/log.h"

POT_FUZZ_TARGET({
  const auto l = pot::merkle::Log::load(input);
  const pot::Bytes again = l.save();
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  (void)l.root();
})
