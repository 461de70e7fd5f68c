// The canonical execution spec (docs/PROTOCOL.md section 14): everything a
// verifier needs to replay a step exactly as the miner ran it. Wire form:
// the canonical encoding of pot.v2.ExecutionSpec; hand-written form: JSON
// (docs/cli.md). Its digest is part of the training commitment.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "commit/lr_schedule.h"
#include "hash/dtype.h"
#include "hash/sha256.h"

namespace pot::commit {

enum class OptimizerKind { kSgd = 1, kAdam = 2, kAdamW = 3 };
enum class SeedPolicyKind { kPerStep = 1, kSingleSeed = 2, kNone = 3 };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0;
  double weight_decay = 0;
  // SGD
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  // Adam, AdamW
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  bool amsgrad = false;
};

struct ExecutionSpec {
  std::string framework;
  std::string framework_version;
  hash::Digest model_program_digest;
  hash::DType dtype = hash::DType::kF32;
  std::string attention_backend;
  double dropout = 0;
  bool other_rng_use = false;
  OptimizerSpec optimizer;
  double grad_clip_max_norm = 0;
  uint32_t grad_accum_microbatches = 1;
  uint32_t batch_size = 1;
  bool deterministic_algorithms = false;
  uint32_t intra_op_threads = 0;
  std::string hardware_class;  // cpu-<arch>/aten:<capability>/onednn:<isa> (commit/hardware_class.h)
  SeedPolicyKind seed_policy = SeedPolicyKind::kNone;
  uint64_t seed = 0;  // base seed (per_step) or the seed (single_seed)
  uint32_t norm_bucket_resolution = 0;
  LrSchedule lr_schedule;  // empty: optimizer.lr at every step

  // The learning rate of training step `step` (>= 1): optimizer.lr through
  // lr_schedule (lr_schedule.h). O(step).
  double learning_rate(uint64_t step) const;

  // Throws kInvalidArgument naming the first rule broken (docs/PROTOCOL.md
  // section 14.2), e.g. dropout without a seed policy or unpinned threads.
  void validate() const;

  // Canonical protobuf bytes. Validates first.
  Bytes encode() const;
  // Parses, validates, and rejects (kMalformed) bytes that are not the
  // canonical encoding of what they decode to: unknown fields, defaults
  // written out, fields out of order, a non-minimal varint...
  static ExecutionSpec decode(ByteView b);
  // tagged("pot/v2/spec", encode()).
  hash::Digest digest() const;

  // The JSON form (docs/cli.md "Execution spec"): unknown or missing keys
  // are errors (kInvalidArgument), values are range-checked by validate().
  static ExecutionSpec from_json(const nlohmann::json &j);
  nlohmann::json to_json() const;
};

inline constexpr size_t kMaxSpecBytes = 4096;

// The model program digest the spec carries (docs/PROTOCOL.md section 21.2):
// tagged("pot/v1/program", the program file's bytes).
hash::Digest program_digest(ByteView file_bytes);
// The same over a file, streamed. kIo when it cannot be read.
hash::Digest program_digest_file(const std::string &path);

}  // namespace pot::commit
