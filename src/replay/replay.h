// Single-step replay on LibTorch (docs/PROTOCOL.md section 21): load a
// TorchScript model program, put the pre-state S_{t-1} into it, run step t
// (seed by the policy, forward, backward, clipping, optimizer update) exactly
// as torch.optim of the same torch build does, and give back S_t in canonical
// names, its digest, the step's loss and the norm bucket of the update.
//
// This is the only layer that includes LibTorch headers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/script.h>

#include "commit/dataset.h"
#include "spec/spec.h"
#include "spec/state_names.h"
#include "dispute/op_node.h"
#include "hash/safetensors.h"
#include "hash/update_norm.h"
#include "witness/gradient_trace.h"

namespace pot::replay {

// Canonical state names (docs/PROTOCOL.md section 21.1): spec/state_names.h.
using spec::kBufferPrefix;
using spec::kGradPrefix;
using spec::kLrName;
using spec::kOptimPrefix;
using spec::kParamPrefix;
using spec::kRngName;
// The program method the replay calls after the optimizer update, if the
// program defines it (docs/PROTOCOL.md 21.3).
inline constexpr std::string_view kAfterStepMethod = "pot_after_step";

// A training state in canonical names, bytewise name order. Tensors are
// contiguous CPU tensors owned by the map.
using TensorMap = std::map<std::string, at::Tensor>;

// A loaded TorchScript model program whose forward(*inputs) returns the loss.
class Program {
 public:
  // Loads the program of `spec`, checking everything about it once: reads
  // the file, checks its digest against spec.model_program_digest
  // (kProofMismatch), checks the archive and every operator
  // (check_program_archive, check_program_operators: kUnsupported), loads it
  // (kInvalidArgument when LibTorch cannot), checks that it has a forward
  // method taking only tensors, and that its dropout is the spec's
  // (check_program_dropout). replay_step trusts these checks for every spec
  // with the same digest and dropout.
  static std::unique_ptr<Program> load(const std::string &path, const spec::ExecutionSpec &spec);

  const hash::Digest &digest() const { return digest_; }
  // The forward's argument names after self: the sample tensor names, in the
  // order the batch tensors are passed.
  const std::vector<std::string> &inputs() const { return inputs_; }
  // Parameters (deduplicated by identity, first name kept: tied weights are
  // one parameter) and buffers, in module order.
  const std::vector<std::pair<std::string, at::Tensor>> &params() const { return params_; }
  const std::vector<std::pair<std::string, at::Tensor>> &buffers() const { return buffers_; }
  torch::jit::Module &module() { return module_; }
  // Whether the program defines pot_after_step(self) -> None, which the
  // replay calls after the optimizer update (docs/PROTOCOL.md 21.3).
  bool has_after_step() const { return has_after_step_; }
  // The dropout probability the program was checked against at load.
  double checked_dropout() const { return checked_dropout_; }

 private:
  Program() = default;
  torch::jit::Module module_;
  hash::Digest digest_{};
  double checked_dropout_ = 0;
  bool has_after_step_ = false;
  std::vector<std::string> inputs_;
  std::vector<std::pair<std::string, at::Tensor>> params_;
  std::vector<std::pair<std::string, at::Tensor>> buffers_;
};

// Held while pot changes process-wide LibTorch state (the default CPU
// generator, the intra-op thread count): by every replay and by the
// recorder's begin_step, so neither disturbs the other.
std::mutex &torch_state_mutex();

// Copies every tensor of a safetensors state into owned CPU tensors.
TensorMap load_state(const hash::SafetensorsFile &file);
// Views of the tensors' bytes (which must stay alive), for digests/writing.
std::vector<hash::StTensor> state_views(const TensorMap &state);
hash::Digest state_digest(const TensorMap &state, unsigned threads);

// The samples of one step: micro-batches in schedule order, each a list of
// parsed sample files in schedule order.
using Batch = std::vector<std::vector<const hash::SafetensorsFile *>>;

// The batch of a schedule entry: samples[i] is the parsed sample of the
// entry's i-th index (all micro-batches concatenated); the result points
// into samples. kInvalidArgument when the counts differ.
Batch split_batch(const commit::ScheduleEntry &entry,
                  const std::vector<std::unique_ptr<hash::SafetensorsFile>> &samples);

struct StepResult {
  TensorMap post;            // S_t in canonical names
  hash::Digest post_digest;  // state digest of post
  double loss = 0;           // the step leaf's loss (section 21.3)
  double update_norm = 0;    // section 13, prefix "param/"
  int64_t norm_bucket = 0;   // at the spec's resolution
  witness::GradientTrace gradient;  // check 27's evidence
  // State digest of the gradient the optimizer consumed (accumulated and
  // clipped), named "grad/<parameter>": what only a replay gives
  // (docs/PROTOCOL.md 19, 21.3).
  hash::Digest gradient_digest;
};

struct StepOptions {
  unsigned hash_threads = 0;  // threads for digests (0 = all cores); never changes a digest
  // A NaN or infinite loss is kNonFinite unless this is set; then the step
  // completes and StepResult::loss carries it (a verifier comparing a step
  // whose committed loss is NaN).
  bool allow_nonfinite_loss = false;
  // Intra-op threads to run with; 0 = the spec's. Anything else changes the
  // bits: only for the cross-architecture (norm-bucket) path.
  unsigned intra_op_threads = 0;
  // Replay on this process's hardware class although the spec names another
  // (kUnsupported otherwise: the bits differ). Only for the
  // cross-architecture (norm-bucket) path.
  bool other_hardware_class = false;
  // The rates of steps t and t+1 when the caller has them from one pass over
  // the schedule (re-deriving a run of states); otherwise computed from the
  // spec. Callers pass spec.learning_rate values, nothing else.
  std::optional<std::pair<double, double>> rates;
  // The run the step belongs to: its per-step seed names it (docs/PROTOCOL.md
  // section 9). Required under the per_step seed policy (kInvalidArgument
  // otherwise), unused under the others.
  std::optional<hash::Digest> run_id;
  // When set, the step's operator trace (docs/PROTOCOL.md 22.2) is written
  // here: the top-level ATen operators of the forward, backward, clipping and
  // optimizer update, then the post-state node. Slower (every operator's
  // inputs and outputs are hashed); the step's results are the same.
  struct OpTraceOut *op_trace = nullptr;
};

struct OpTraceOut {
  std::vector<dispute::OpNode> nodes;
  // A node whose input tensors' bytes to keep (depth-first, row-major): what
  // an opening of that node carries for the referee to run it.
  std::optional<uint64_t> capture;
  std::vector<Bytes> captured;
};

// The LibTorch version this build replays with (TORCH_VERSION, "1.13.0"):
// what a witness states as its environment's framework_version.
const std::string &framework_version();

// Refuses (kUnsupported) a spec this build cannot replay bit for bit:
// another framework, another framework_version (major.minor) than the
// LibTorch it runs, an attention_backend other than "math". The hardware
// class, a property of the process rather than the build, is
// check_hardware_class's (replay/hardware_probe.h).
void check_replayable(const spec::ExecutionSpec &spec);

// The state name of parameter group g's learning rate: hparam/lr for group
// 0, hparam/lr/<g> (decimal) for the spec's param_groups (docs/PROTOCOL.md
// 21.1).
std::string group_lr_name(size_t g);
// A state's hparam/lr (or `name`): kInvalidArgument when it holds none, or
// not an F64 scalar, or one that is not finite and >= +0.
double state_learning_rate(const std::vector<hash::StTensor> &state, std::string_view name = kLrName);
// The problem with a held hparam/lr, when it is not `expected` (the rate the
// spec's schedule gives step `step`) bit for bit; nullopt when it is.
std::optional<std::string> learning_rate_mismatch(double held, double expected, uint64_t step,
                                                  std::string_view name = kLrName);

// Replays step t from `pre`, with the learning rate the spec's schedule
// gives step t; S_t records the rate of step t+1 as hparam/lr. Errors:
// kInvalidArgument for a pre-state whose hparam/lr is not the schedule's
// rate of step t, a state that does not
// fit the program or the optimizer (missing, extra, or mis-shaped tensors,
// wrong dtypes), a batch that does not fit the forward, a forward that does
// not return a scalar; kNonFinite when the loss is NaN or infinite (unless
// options.allow_nonfinite_loss); kProofMismatch when the program is not the
// spec's.
StepResult replay_step(Program &program, const spec::ExecutionSpec &spec, uint64_t step,
                       const TensorMap &pre, const Batch &batch, const StepOptions &options = {});

}  // namespace pot::replay
