// C entry points for dataset, schedule and training commitments.
#include <algorithm>
#include <vector>

#include "capi/firewall.h"
#include "capi/handles.h"
#include "commit/commitment.h"
#include "commit/dataset.h"
#include "statecheck/state_flags.h"

using namespace pot;
using namespace pot::capi;

namespace {

// Positions first.. of an index stream drawn by `draw` (a seeded or uniform
// schedule's): out stays untouched unless the whole window is drawn.
template <typename Draw>
pot_status stream_positions(uint64_t *out, size_t count, pot_error **err, Draw draw) {
  return guard(err, [&] {
    if (count > POT_MAX_STREAM_POSITIONS)
      fail(Status::kLimit, "{} positions asked, at most {} per call (POT_MAX_STREAM_POSITIONS)", count,
           POT_MAX_STREAM_POSITIONS);
    if (count > 0) need(out, "out");
    std::vector<uint64_t> v(count);
    draw(v.data(), count);
    std::copy(v.begin(), v.end(), out);
  });
}

}  // namespace

extern "C" {

pot_status pot_sample_digest(pot_digest *out, const uint8_t *safetensors, size_t safetensors_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, commit::sample_digest(bytes_arg(safetensors, safetensors_len, "safetensors")));
  });
}

pot_status pot_schedule_entry_encode(pot_bytes *out, uint64_t step, const uint64_t *indices, size_t indices_len,
                                     const uint32_t *microbatch_sizes, size_t microbatch_sizes_len, uint64_t dataset_size,
                                     pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    if (indices_len) need(indices, "indices");
    if (microbatch_sizes_len) need(microbatch_sizes, "microbatch_sizes");
    if (microbatch_sizes_len > commit::kMaxMicrobatches)
      fail(Status::kInvalidArgument, "{} micro-batches, the limit is {}", microbatch_sizes_len, commit::kMaxMicrobatches);
    commit::ScheduleEntry e;
    e.step = step;
    size_t at = 0;
    for (size_t m = 0; m < microbatch_sizes_len; ++m) {
      const size_t n = microbatch_sizes[m];
      if (n > indices_len - at)
        fail(Status::kInvalidArgument, "micro-batch sizes add up to more than the {} indices given", indices_len);
      e.micro.emplace_back(indices + at, indices + at + n);
      at += n;
    }
    if (at != indices_len)
      fail(Status::kInvalidArgument, "micro-batch sizes add up to {}, not the {} indices given", at, indices_len);
    to_bytes(out, e.encode(dataset_size));
  });
}

pot_status pot_schedule_entry_decode(uint64_t *step, uint64_t *indices, size_t *indices_len, uint32_t *microbatch_sizes,
                                     size_t *microbatch_sizes_len, const uint8_t *entry, size_t entry_len, pot_error **err) {
  return guard(err, [&] {
    need(indices_len, "indices_len");
    need(microbatch_sizes_len, "microbatch_sizes_len");
    const commit::ScheduleEntry e = commit::ScheduleEntry::decode(bytes_arg(entry, entry_len, "entry"));
    const std::vector<uint64_t> all = e.indices();
    const bool fits = (!indices || *indices_len >= all.size()) && (!microbatch_sizes || *microbatch_sizes_len >= e.micro.size());
    const size_t cap_i = *indices_len, cap_m = *microbatch_sizes_len;
    *indices_len = all.size();
    *microbatch_sizes_len = e.micro.size();
    if (!fits)
      fail(Status::kInvalidArgument, "the entry holds {} indices in {} micro-batches; capacities were {} and {}",
           all.size(), e.micro.size(), cap_i, cap_m);
    if (step) *step = e.step;
    if (indices) std::copy(all.begin(), all.end(), indices);
    if (microbatch_sizes)
      for (size_t m = 0; m < e.micro.size(); ++m) microbatch_sizes[m] = static_cast<uint32_t>(e.micro[m].size());
  });
}

pot_status pot_seeded_schedule_entry(pot_bytes *out, uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                     uint32_t microbatches, uint64_t step, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, commit::seeded_schedule_entry(seed, dataset_size, batch_size, microbatches, step).encode(dataset_size));
  });
}

pot_status pot_seeded_schedule_root(pot_digest *out, uint64_t seed, uint64_t dataset_size, uint32_t batch_size,
                                    uint32_t microbatches, uint64_t steps, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, commit::seeded_schedule_root(seed, dataset_size, batch_size, microbatches, steps));
  });
}


pot_status pot_seeded_schedule_stream(uint64_t *out, size_t out_len, uint64_t seed, uint64_t dataset_size,
                                      uint64_t first, pot_error **err) {
  return stream_positions(out, out_len, err, [&](uint64_t *v, size_t n) {
    commit::seeded_schedule_stream(seed, dataset_size, first, v, n);
  });
}

pot_status pot_uniform_schedule_stream(uint64_t *out, size_t out_len, uint64_t seed, uint64_t dataset_size,
                                       uint64_t first, pot_error **err) {
  return stream_positions(out, out_len, err, [&](uint64_t *v, size_t n) {
    commit::uniform_schedule_stream(seed, dataset_size, first, v, n);
  });
}

pot_status pot_commitment_from_json(pot_commitment **out, const char *json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto c = commit::TrainingCommitment::from_json(parse_json_arg(json, "json"));
    *out = new pot_commitment{std::move(c)};
  });
}

pot_status pot_commitment_decode(pot_commitment **out, const uint8_t *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto c = commit::TrainingCommitment::decode(bytes_arg(data, data_len, "data"));
    *out = new pot_commitment{std::move(c)};
  });
}

void pot_commitment_free(pot_commitment *commitment) { delete commitment; }

pot_status pot_commitment_set_sealed_flags(pot_commitment *commitment, const uint64_t *flagged_steps,
                                           size_t flagged_steps_len, pot_error **err) {
  return guard(err, [&] {
    need(commitment, "commitment");
    std::vector<uint64_t> f = u64_list_arg(flagged_steps, flagged_steps_len, "flagged_steps");
    const uint64_t n = commitment->c.declared_steps;
    if (const auto i = statecheck::misplaced_step(f, n))
      fail(Status::kInvalidArgument, "flagged_steps must ascend within 1..{} (declared steps); element {} is {}", n,
           *i, f[*i]);
    commitment->sealed_flags = std::move(f);
  });
}

pot_status pot_commitment_encode(pot_bytes *out, const pot_commitment *commitment, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(commitment, "commitment")->c.encode());
  });
}

pot_status pot_commitment_to_json(pot_bytes *out, const pot_commitment *commitment, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_text(out, need(commitment, "commitment")->c.to_json().dump());
  });
}

pot_status pot_commitment_run_id(pot_digest *out, const pot_commitment *commitment, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(commitment, "commitment")->c.run_id());
  });
}

pot_status pot_commitment_digests(pot_digest *initial_state, pot_digest *schedule_root, pot_digest *dataset_root,
                                  pot_digest *spec_digest, const pot_commitment *commitment, pot_error **err) {
  return guard(err, [&] {
    const commit::TrainingCommitment &c = need(commitment, "commitment")->c;
    if (initial_state) from_digest(initial_state, c.initial_state_digest);
    if (schedule_root) from_digest(schedule_root, c.schedule_root);
    if (dataset_root) from_digest(dataset_root, c.dataset_root);
    if (spec_digest) from_digest(spec_digest, c.spec_digest);
  });
}

uint64_t pot_commitment_declared_steps(const pot_commitment *commitment) {
  return commitment ? commitment->c.declared_steps : 0;
}

uint64_t pot_commitment_dataset_size(const pot_commitment *commitment) {
  return commitment ? commitment->c.dataset_size : 0;
}

pot_status pot_commitment_task_id(pot_digest *out, const pot_commitment *commitment, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(commitment, "commitment")->c.task_id);
  });
}

}  // extern "C"
