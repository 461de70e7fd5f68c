// C entry points of the commit and witness layers: seeds, step leaves,
// challenges, security arithmetic, norm buckets.
#include "capi/firewall.h"
#include "capi/handles.h"
#include "challenge/challenge.h"
#include "bond/deterrence.h"
#include "challenge/security.h"
#include "spec/seed.h"
#include "commit/step_leaf.h"
#include "hash/update_norm.h"
#include "witness/norm_bucket.h"

static_assert(POT_STEP_LEAF_SIZE == pot::commit::StepLeaf::kSize);
static_assert(POT_MAX_CHALLENGE_ROUNDS == pot::challenge::kMaxRounds);
static_assert(POT_MAX_BEACON_BYTES == pot::challenge::kMaxBeaconBytes);

using namespace pot;
using namespace pot::capi;

extern "C" {

size_t pot_step_leaf_size(void) { return POT_STEP_LEAF_SIZE; }
uint64_t pot_max_challenge_rounds(void) { return POT_MAX_CHALLENGE_ROUNDS; }
size_t pot_max_beacon_bytes(void) { return POT_MAX_BEACON_BYTES; }

pot_status pot_seed_derive(uint64_t *out, uint64_t base_seed, const pot_digest *run_id, uint64_t step,
                           pot_error **err) {
  return guard(err, [&] { *need(out, "out") = spec::derive_seed(base_seed, to_digest(run_id, "run_id"), step); });
}

pot_status pot_step_leaf_encode(uint8_t out[POT_STEP_LEAF_SIZE], const pot_digest *run_id, uint64_t step,
                                const pot_digest *state_digest, const pot_digest *stats_digest, double loss,
                                double update_norm, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    commit::StepLeaf l{to_digest(run_id, "run_id"), step, to_digest(state_digest, "state_digest"), loss, update_norm};
    l.stats_digest = to_digest(stats_digest, "stats_digest");
    const Bytes b = l.encode();
    std::memcpy(out, b.data(), b.size());
  });
}

pot_status pot_step_leaf_decode(pot_digest *run_id, uint64_t *step, pot_digest *state_digest,
                                pot_digest *stats_digest, double *loss, double *update_norm, const uint8_t *leaf,
                                size_t leaf_len, pot_error **err) {
  return guard(err, [&] {
    const commit::StepLeaf l = commit::StepLeaf::decode(bytes_arg(leaf, leaf_len, "leaf"));
    if (run_id) from_digest(run_id, l.run_id);
    if (step) *step = l.step;
    if (state_digest) from_digest(state_digest, l.state_digest);
    if (stats_digest) from_digest(stats_digest, l.stats_digest);
    if (loss) *loss = l.loss;
    if (update_norm) *update_norm = l.update_norm;
  });
}

pot_status pot_challenge_derive(uint64_t *steps, size_t steps_len, const uint8_t *beacon, size_t beacon_len,
                                const pot_digest *run_id, uint64_t num_steps, pot_error **err) {
  return guard(err, [&] {
    if (steps_len) need(steps, "steps");
    const auto out = challenge::derive_challenges(bytes_arg(beacon, beacon_len, "beacon"), to_digest(run_id, "run_id"),
                                               num_steps, steps_len);
    std::copy(out.begin(), out.end(), steps);
  });
}

pot_status pot_security_detection_probability(double *out, uint64_t steps, uint64_t forged, uint64_t challenges,
                                              pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = challenge::detection_probability(steps, forged, challenges);
  });
}

pot_status pot_security_challenges_needed(uint64_t *out, uint64_t steps, uint64_t forged, double target,
                                          pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = challenge::challenges_needed(steps, forged, target);
  });
}

pot_status pot_security_bond(uint64_t *out, uint64_t reward, double detection_probability, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = bond::deterrent_bond(reward, detection_probability);
  });
}

int64_t pot_norm_bucket_zero(void) { return witness::kBucketZero; }
int64_t pot_norm_bucket_nonfinite(void) { return witness::kBucketNonFinite; }

pot_status pot_norm_bucket(int64_t *out, double norm, uint32_t resolution, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = witness::norm_bucket(norm, resolution);
  });
}

int pot_norm_buckets_match(int64_t committed, int64_t observed) {
  return witness::buckets_match(committed, observed) ? 1 : 0;
}

pot_status pot_update_norm(double *out, const pot_safetensors *pre, const pot_safetensors *post,
                           const char *prefix, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const std::string p(prefix ? prefix : "");
    *out = hash::update_norm(*need(pre, "pre")->file, *need(post, "post")->file, p);
  });
}

}  // extern "C"
