// The JSON form of a spec (docs/cli.md), as pot spec reads it.
#include <string>

#include <nlohmann/json.hpp>

#include "spec/spec.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  const nlohmann::json j = nlohmann::json::parse(input.begin(), input.end(), nullptr, false);
  if (!j.is_discarded()) (void)pot::spec::ExecutionSpec::from_json(j).encode();
})
