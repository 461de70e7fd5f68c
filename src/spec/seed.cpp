#include "spec/seed.h"

#include "hash/sha256.h"

namespace pot::spec {

uint64_t derive_seed(uint64_t base_seed, const hash::Digest &run_id, uint64_t step) {
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/seed");
  const hash::Digest d = h.update_u64le(base_seed).update(run_id.view()).update_u64le(step).finish();
  return get_u64le(d.bytes.data());
}

hash::Digest probe_run_id(const hash::Digest &run_id) {
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/seed-probe");
  return h.update(run_id.view()).finish();
}

}  // namespace pot::spec
