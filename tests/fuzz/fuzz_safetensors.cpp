// safetensors bytes (a sample payload, or a state file's contents).
#include "fuzz_common.h"
#include "hash/safetensors.h"

POT_FUZZ_TARGET({
  auto f = pot::hash::SafetensorsFile::from_bytes(input);
  (void)f->digest(1);
})
