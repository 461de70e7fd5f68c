// The canonical execution spec (docs/PROTOCOL.md section 14): everything a
// verifier needs to replay a step exactly as the miner ran it. Wire form:
// the canonical encoding of pot.v2.ExecutionSpec; hand-written form: JSON
// (docs/cli.md). Its digest is part of the training commitment.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/lr_schedule.h"
#include "hash/dtype.h"
#include "hash/sha256.h"

namespace pot::spec {

// The optimizers of torch.optim the replay ports (docs/PROTOCOL.md 14.2);
// the values are the Optimizer oneof's field numbers.
enum class OptimizerKind {
  kSgd = 1,
  kAdam = 2,
  kAdamW = 3,
  kAdadelta = 4,
  kAdagrad = 5,
  kRmsProp = 6,
  kAdamax = 7,
  kNAdam = 8,
  kRAdam = 9,
  kMuon = 10,
};
enum class SeedPolicyKind { kPerStep = 1, kSingleSeed = 2, kNone = 3 };
// How a step computes (docs/PROTOCOL.md 14.6): with ATen's own kernels,
// whose bits the hardware class and the thread count pin (native), or in
// pot-repro/1, whose bits are the same on every IEEE-754 CPU at any thread
// count.
enum class Arithmetic { kNative = 0, kRepro1 = 1 };
// "native", "pot-repro/1".
const char *arithmetic_name(Arithmetic a);

// "sgd", "adam", ... as the JSON form and messages name them.
const char *optimizer_name(OptimizerKind k);

// One optimizer's hyper-parameters. A field a kind does not have stays at
// its default (validate() refuses anything else, naming it).
struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0;
  double weight_decay = 0;
  bool maximize = false;                // every kind but muon
  double momentum = 0;                  // sgd, rmsprop, muon
  double dampening = 0;                 // sgd
  bool nesterov = false;                // sgd, muon
  double beta1 = 0;                     // adam, adamw, adamax, nadam, radam
  double beta2 = 0;                     // adam, adamw, adamax, nadam, radam
  double eps = 0;                       // every kind but sgd
  bool amsgrad = false;                 // adam, adamw
  double rho = 0;                       // adadelta
  double lr_decay = 0;                  // adagrad
  double initial_accumulator_value = 0; // adagrad
  double alpha = 0;                     // rmsprop
  bool centered = false;                // rmsprop
  double momentum_decay = 0;            // nadam
  bool decoupled_weight_decay = false;  // nadam, radam
  double ns_a = 0, ns_b = 0, ns_c = 0;  // muon: ns_coefficients
  uint32_t ns_steps = 0;                // muon
  std::string adjust_lr_fn;             // muon: original, match_rms_adamw or spectral_unclamped

  // Throws kInvalidArgument naming `where`.<field> for the first rule
  // broken (docs/PROTOCOL.md 14.2).
  void validate(const std::string &where) const;
};

// A parameter group besides group 0 (docs/PROTOCOL.md 14.5).
struct ParamGroup {
  OptimizerSpec optimizer;
  std::vector<std::string> params;  // program parameter names, strictly increasing (bytes)
};

inline constexpr size_t kMaxParamGroups = 64;
inline constexpr size_t kMaxParamNameBytes = 256;

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
  std::string hardware_class;  // cpu-<arch>/aten:<capability>/onednn:<isa> (spec/hardware_class.h)
  SeedPolicyKind seed_policy = SeedPolicyKind::kNone;
  uint64_t seed = 0;  // base seed (per_step) or the seed (single_seed)
  uint32_t norm_bucket_resolution = 0;
  LrSchedule lr_schedule;  // empty: optimizer.lr at every step
  // Groups 1..n (param_groups[g - 1]); group 0 is `optimizer` and holds
  // every parameter no group names.
  std::vector<ParamGroup> param_groups;
  double grad_clip_value = 0;  // clip_grad_value_(clip_value); 0: none
  // native: intra_op_threads and hardware_class pin the bits; pot-repro/1:
  // both are absent (0 and empty), no part of what a verifier must match.
  Arithmetic arithmetic = Arithmetic::kNative;
  bool reproducible() const { return arithmetic != Arithmetic::kNative; }

  size_t group_count() const { return 1 + param_groups.size(); }
  // Whether the steps draw random numbers (dropout > 0 or other_rng_use),
  // and how a message names that declaration ("dropout 0.1", or
  // "other_rng_use (dropout 0)").
  bool declares_rng() const { return dropout > 0 || other_rng_use; }
  std::string rng_declaration() const;
  // Group g's optimizer (g = 0: `optimizer`).
  const OptimizerSpec &group_optimizer(size_t g) const;
  // The group that updates parameter `name`: the one whose params name it,
  // else 0 (docs/PROTOCOL.md 14.5). O(groups * log(names)).
  size_t group_of(std::string_view name) const;
  // Group g's learning rate at training step `step`: its base lr through
  // lr_schedule (every group follows the one schedule). O(step).
  double group_learning_rate(size_t g, uint64_t step) const;

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

inline constexpr size_t kMaxSpecBytes = 65536;

// The model program digest the spec carries (docs/PROTOCOL.md section 21.2):
// tagged("pot/v1/program", the program file's bytes).
hash::Digest program_digest(ByteView file_bytes);
// The same over a file, streamed. kIo when it cannot be read.
hash::Digest program_digest_file(const std::string &path);

}  // namespace pot::spec
