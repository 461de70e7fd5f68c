// Full verification of one challenged step (docs/PROTOCOL.md section 21.5):
// the opening checks of section 18, then the replay of the step from the
// served S_{t-1}, compared with leaf t bit for bit, or, on the
// cross-architecture path, by norm bucket against leaf t's committed norm.
#pragma once

#include <optional>
#include <string>

#include "commit/opening.h"
#include "spec/spec.h"
#include "replay/replay.h"

namespace pot::replay {

enum class VerifyMode { kBitwise = 1, kNormBucket = 2 };

struct VerifyResult {
  commit::OpeningCheck check = commit::OpeningCheck::kOk;  // first failed check, kOk when verified
  Status status = Status::kOk;
  std::string message;
  bool replayed = false;           // the replay ran: the fields below are set
  hash::Digest replayed_state_digest;
  double loss = 0;
  double update_norm = 0;
  int64_t norm_bucket = 0;
  hash::Digest committed_state_digest;  // from leaf t
  double committed_loss = 0;
  double committed_update_norm = 0;     // from leaf t (check 26 binds it to S_{t-1}, S_t)
  int64_t committed_norm_bucket = 0;    // of committed_update_norm
  witness::GradientTrace gradient;      // of the replay (check 27)
  hash::Digest gradient_digest;         // of the replay: the step's gradient (PROTOCOL 19)
  // kNormBucket, once the replay ran: how far the committed loss and the
  // served S_t's update are from the replay's (witness/tolerance.h).
  double loss_error = 0;
  double update_error = 0;
  double tensor_update_error = 0;
};

struct VerifyInputs {
  const commit::TrainingCommitment *commitment = nullptr;
  const spec::ExecutionSpec *spec = nullptr;
  std::string program_path;
  uint64_t challenged_step = 0;
  uint64_t log_size = 0;
  hash::Digest log_root;
  ByteView manifest;
  std::string pre_state_path;
  std::optional<std::string> post_state_path;  // required for kNormBucket
  VerifyMode mode = VerifyMode::kBitwise;
  unsigned hash_threads = 0;
  unsigned intra_op_threads = 0;  // 0 = the spec's (see StepOptions)
  // The flagged steps the run sealed with on the ledger (check 32), when known.
  std::optional<std::vector<uint64_t>> sealed_flags;
};

// Never throws for a bad opening or a step that does not replay: the result
// names the first failed check. Throws for misuse (kInvalidArgument).
VerifyResult verify_step(const VerifyInputs &in);

}  // namespace pot::replay
