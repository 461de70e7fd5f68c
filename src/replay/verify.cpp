#include "replay/verify.h"

#include <cstring>

#include "commit/dataset.h"
#include "common/error.h"
#include "hash/update_norm.h"
#include "spec/seed.h"
#include "statecheck/state_stats.h"
#include "witness/norm_bucket.h"
#include "witness/tolerance.h"

namespace pot::replay {
namespace {

VerifyResult failed(VerifyResult r, commit::OpeningCheck c, Status s, const std::string &message) {
  r.check = c;
  r.status = s;
  r.message = fmt::format("{}: {}", commit::opening_check_name(c), message);
  return r;
}

uint64_t bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

// Check 27, last: the step's S_t (the committed one in the bitwise path) is
// one a zero gradient would give as well.
VerifyResult gradient_check(VerifyResult r, uint64_t step) {
  if (auto why = witness::gradient_ignored(r.gradient, step))
    return failed(std::move(r), commit::OpeningCheck::kGradientIgnored, Status::kProofMismatch, *why);
  return r;
}

// The served batch and S_{t-1}, as the replay takes them (the batch points
// into `files`, the state into `pre_file`).
struct Served {
  std::vector<std::unique_ptr<hash::SafetensorsFile>> files;
  Batch batch;
  std::unique_ptr<hash::SafetensorsFile> pre_file;
  TensorMap pre;
};

Served load_served(const VerifyInputs &in, const commit::OpeningResult &o) {
  Served v;
  for (const commit::SampleOpening &so : o.manifest.samples)
    v.files.push_back(hash::SafetensorsFile::from_bytes(so.payload));
  const commit::ScheduleEntry entry = commit::ScheduleEntry::decode(o.manifest.schedule_entry);
  v.batch = split_batch(entry, v.files);
  v.pre_file = hash::SafetensorsFile::open(in.pre_state_path);
  v.pre = load_state(*v.pre_file);
  return v;
}

// The rates are the spec's, never the miner's: S_{t-1} must hold the rate
// of step t, a served S_t the rate of step t+1. The replay itself derives
// S_t's rate, so the bitwise path compares it through the state digest.
// Returns the failure, or nullopt with the rates of t and t+1 in `rates`.
std::optional<VerifyResult> check_rates(const VerifyInputs &in, const TensorMap &pre, const VerifyResult &r,
                                        double rates[2]) {
  const uint64_t t = in.challenged_step;
  try {
    spec::learning_rates(in.spec->lr_schedule, in.spec->optimizer.lr, t, 2, rates);
    if (auto bad = learning_rate_mismatch(state_learning_rate(state_views(pre)), rates[0], t))
      return failed(r, commit::OpeningCheck::kLearningRate, Status::kProofMismatch,
                    fmt::format("served S_{}: {}", t - 1, *bad));
    if (in.mode != VerifyMode::kNormBucket) return std::nullopt;
    const auto post_file = hash::SafetensorsFile::open(*in.post_state_path);
    const long i = post_file->find(kLrName);
    if (i < 0) fail(Status::kInvalidArgument, "served S_{} has no '{}' tensor", t, kLrName);
    const double held =
        state_learning_rate({{post_file->entry(static_cast<size_t>(i)).meta, post_file->data(static_cast<size_t>(i))}});
    if (auto bad = learning_rate_mismatch(held, rates[1], t + 1))
      return failed(r, commit::OpeningCheck::kLearningRate, Status::kProofMismatch,
                    fmt::format("served S_{}: {}", t, *bad));
  } catch (const Error &e) {
    return failed(r, commit::OpeningCheck::kLearningRate, e.status(), e.what());
  }
  return std::nullopt;
}

// The replayed step against leaf t: bit for bit (state, loss, norm), or
// the norm's bucket; then check 27.
VerifyResult compare(const VerifyInputs &in, const commit::OpeningResult &o, const TensorMap &pre, const StepResult &s,
                     VerifyResult r) {
  const uint64_t t = in.challenged_step;
  if (in.mode == VerifyMode::kBitwise) {
    if (s.post_digest != o.post_state_digest)
      return failed(r, commit::OpeningCheck::kReplayedState, Status::kProofMismatch,
                    fmt::format("step {} replays to state {}, leaf {} commits to {}", t, s.post_digest.hex(), t,
                                o.post_state_digest.hex()));
    // S_t is leaf t's, so its statistics are a function of it: a leaf
    // committing another table hides the flags of its steps (PROTOCOL 5.3).
    const hash::Digest stats = statecheck::state_stats(state_views(s.post), in.hash_threads).digest();
    if (stats != o.post_stats_digest)
      return failed(r, commit::OpeningCheck::kStateStats, Status::kProofMismatch,
                    fmt::format("the statistics table of the replayed S_{} digests to {}, leaf {} commits to {}", t,
                                stats.hex(), t, o.post_stats_digest.hex()));
    if (bits(s.loss) != bits(r.committed_loss))
      return failed(r, commit::OpeningCheck::kReplayedLoss, Status::kProofMismatch,
                    fmt::format("step {} replays to loss {:.17g}, leaf {} commits to {:.17g}", t, s.loss, t,
                                r.committed_loss));
    // S_t is leaf t's, so its norm is a function of the states: a leaf
    // committing another norm would mislead a cross-architecture verifier.
    if (bits(s.update_norm) != bits(r.committed_update_norm))
      return failed(r, commit::OpeningCheck::kCommittedNorm, Status::kProofMismatch,
                    fmt::format("step {} replays to the update norm {:.17g}, leaf {} commits to {:.17g}", t,
                                s.update_norm, t, r.committed_update_norm));
    return gradient_check(r, t);
  }
  // The served S_t gave leaf t's norm bit for bit (check 26 of the opening).
  // The work, not one scalar: the loss and the update itself, within the
  // tolerances measured on the determinism matrix (witness/tolerance.h).
  hash::UpdateAgreement a;
  try {
    const auto post_file = hash::SafetensorsFile::open(*in.post_state_path);
    a = hash::update_agreement(state_views(pre), hash::tensor_views(*post_file), state_views(s.post),
                               std::string(hash::kLeafNormPrefix), witness::kMinComparedTensorElements);
  } catch (const Error &e) {
    // The opening read and digested the served S_t: a state whose
    // parameters do not pair with S_{t-1}'s is the miner's.
    return failed(r, commit::OpeningCheck::kReplayedUpdate, e.status(), e.what());
  }
  r.loss_error = witness::loss_error(r.committed_loss, s.loss);
  r.update_error = a.relative;
  r.tensor_update_error = a.worst_relative;
  if (!witness::buckets_match(r.committed_norm_bucket, r.norm_bucket))
    return failed(r, commit::OpeningCheck::kReplayedBucket, Status::kProofMismatch,
                  fmt::format("the replayed update has norm {:.17g} (bucket {}), leaf {} commits to {:.17g} (bucket {})",
                              s.update_norm, s.norm_bucket, t, r.committed_update_norm, r.committed_norm_bucket));
  if (auto why = witness::loss_disagrees(r.committed_loss, s.loss, t))
    return failed(r, commit::OpeningCheck::kReplayedLoss, Status::kProofMismatch, *why);
  if (auto why = witness::update_disagrees(a, t))
    return failed(r, commit::OpeningCheck::kReplayedUpdate, Status::kProofMismatch, *why);
  return gradient_check(r, t);
}

// The replay of the step into `s`, its values into `r`; the failure when
// it does not run. A NaN or infinity in a gradient, the replayed loss or
// S_t is a FAIL of its own (the committed loss and the served states were
// checked before).
std::optional<VerifyResult> replay(Program &program, const VerifyInputs &in, const Served &served,
                                   const StepOptions &opts, VerifyResult &r, StepResult &s) {
  try {
    s = replay_step(program, *in.spec, in.challenged_step, served.pre, served.batch, opts);
  } catch (const Error &e) {
    if (e.status() == Status::kNonFinite) return failed(r, commit::OpeningCheck::kNonFinite, e.status(), e.what());
    return failed(r, commit::OpeningCheck::kReplay, e.status(), e.what());
  } catch (const c10::Error &e) {
    return failed(r, commit::OpeningCheck::kReplay, Status::kBackend, e.what_without_backtrace());
  }
  r.replayed = true;
  r.replayed_state_digest = s.post_digest;
  r.loss = s.loss;
  r.update_norm = s.update_norm;
  r.norm_bucket = s.norm_bucket;
  r.gradient = s.gradient;
  r.gradient_digest = s.gradient_digest;
  return std::nullopt;
}

// A step the norm-bucket comparison failed on another thread count than
// the spec's is replayed once more on the spec's (docs/PROTOCOL.md 21.5).
// When it then passes, what differs is the thread count, not the miner's
// work: the task's program makes its result depend on it beyond the
// tolerances (round 3, attack 8: a float sum of constants fingerprints the
// thread count and branches on it). The verifier states check 30
// `task_program` then, which the ledger never counts against the miner.
// `before` is the result before the first replay. Returns that verdict, or
// nullopt to keep `verdict`.
std::optional<VerifyResult> thread_dependent(Program &program, const VerifyInputs &in,
                                             const commit::OpeningResult &o, const Served &served,
                                             const StepOptions &opts, const VerifyResult &before,
                                             const VerifyResult &verdict) {
  const commit::OpeningCheck c = verdict.check;
  // pot-repro/1 steps give the same bits on every thread count: nothing
  // to tell apart.
  if (in.mode != VerifyMode::kNormBucket || in.spec->reproducible() || in.intra_op_threads == 0 ||
      in.intra_op_threads == in.spec->intra_op_threads ||
      (c != commit::OpeningCheck::kReplayedBucket && c != commit::OpeningCheck::kReplayedLoss &&
       c != commit::OpeningCheck::kReplayedUpdate))
    return std::nullopt;
  StepOptions spec_threads = opts;
  spec_threads.intra_op_threads = 0;
  VerifyResult again = before;
  StepResult s;
  if (replay(program, in, served, spec_threads, again, s)) return std::nullopt;
  if (compare(in, o, served.pre, s, again).check != commit::OpeningCheck::kOk) return std::nullopt;
  VerifyResult r = verdict;
  return failed(std::move(r), commit::OpeningCheck::kTaskProgram, Status::kInvalidArgument,
                fmt::format("the task's program gives another step on {} threads than on the spec's {}: on {} it "
                            "fails {} ({}), on {} it verifies; a program whose result depends on the thread count "
                            "is the task's fault, not the miner's (docs/security.md 6.3, attack 8)",
                            in.intra_op_threads, in.spec->intra_op_threads, in.intra_op_threads,
                            commit::opening_check_name(c), verdict.message, in.spec->intra_op_threads));
}

// A step that verified, of a spec declaring randomness under the per_step
// policy, is replayed once more under the seeds of another run id
// (spec::probe_run_id). Declared randomness is what makes the runs of a
// listed task differ (docs/PROTOCOL.md 17.3): a program that draws random
// numbers and throws them away (round 3, attack 3) passes the recorder's
// and the replay's RNG probe, yet every run is one trajectory, which any
// identity can copy. If the step replays to the same S_t, that is the
// task's program, not the miner: check 30. Returns that verdict, or
// nullopt to keep the passing one.
std::optional<VerifyResult> seed_ignored(Program &program, const VerifyInputs &in, const Served &served,
                                         const StepOptions &opts, const StepResult &s, const VerifyResult &verdict) {
  const spec::ExecutionSpec &spec = *in.spec;
  if (verdict.check != commit::OpeningCheck::kOk || spec.seed_policy != spec::SeedPolicyKind::kPerStep ||
      !spec.declares_rng())
    return std::nullopt;
  StepOptions probe = opts;
  probe.run_id = spec::probe_run_id(in.commitment->run_id());
  VerifyResult again = verdict;
  StepResult other;
  // The step replayed under the run's seeds: under others it runs alike.
  if (replay(program, in, served, probe, again, other)) return std::nullopt;
  if (other.post_digest != s.post_digest) return std::nullopt;
  VerifyResult r = verdict;
  return failed(std::move(r), commit::OpeningCheck::kTaskProgram, Status::kInvalidArgument,
                fmt::format("the spec declares {}, but step {} replays to the same state {} under another run's "
                            "seeds: the task's program draws random numbers that change nothing, so every run of a "
                            "listed task is one trajectory any identity can copy (docs/security.md 6.3, attack 3)",
                            spec.rng_declaration(), in.challenged_step, s.post_digest.hex()));
}

}  // namespace

VerifyResult verify_step(const VerifyInputs &in) {
  if (!in.commitment || !in.spec) fail(Status::kInvalidArgument, "verify_step: commitment and spec are required");
  if (in.mode != VerifyMode::kBitwise && in.mode != VerifyMode::kNormBucket)
    fail(Status::kInvalidArgument, "verify_step: unknown mode {}", static_cast<int>(in.mode));
  if (in.mode == VerifyMode::kNormBucket && !in.post_state_path)
    fail(Status::kInvalidArgument, "verify_step: the norm-bucket path needs the served S_t (post_state_path)");

  VerifyResult r;
  const commit::OpeningResult o =
      commit::verify_opening(*in.commitment, in.challenged_step, in.log_size, in.log_root, in.manifest,
                             in.pre_state_path, in.post_state_path, in.hash_threads, in.sealed_flags);
  if (o.check != commit::OpeningCheck::kOk) {
    r.check = o.check;
    r.status = o.status;
    r.message = o.message;
    return r;
  }
  r.committed_state_digest = o.post_state_digest;
  r.committed_loss = o.committed_loss;
  r.committed_update_norm = o.committed_update_norm;
  // Finite and not negative (checks 5 and 24), so this never throws.
  r.committed_norm_bucket = witness::norm_bucket(o.committed_update_norm, in.spec->norm_bucket_resolution);

  if (in.spec->digest() != in.commitment->spec_digest)
    return failed(r, commit::OpeningCheck::kSpec, Status::kProofMismatch,
                  fmt::format("spec digest {} is not the commitment's {}", in.spec->digest().hex(),
                              in.commitment->spec_digest.hex()));
  std::unique_ptr<Program> program;
  try {
    program = Program::load(in.program_path, *in.spec);
  } catch (const Error &e) {
    // A file this verifier cannot read, or whose digest is not the spec's,
    // is its own input (check 19). Past the digest (the only failures
    // Program::load raises after it are kUnsupported and kInvalidArgument)
    // the program is the task's, refused by the rules every verifier
    // applies: the task's fault (check 30), not the miner's.
    const bool task_fault = e.status() == Status::kUnsupported || e.status() == Status::kInvalidArgument;
    return failed(r, task_fault ? commit::OpeningCheck::kTaskProgram : commit::OpeningCheck::kProgram, e.status(),
                  e.what());
  } catch (const c10::Error &e) {
    return failed(r, commit::OpeningCheck::kProgram, Status::kBackend, e.what_without_backtrace());
  }
  Served served;
  try {
    served = load_served(in, o);
  } catch (const Error &e) {
    return failed(r, commit::OpeningCheck::kReplay, e.status(), e.what());
  }
  double rates[2];
  if (auto bad = check_rates(in, served.pre, r, rates)) return *bad;

  StepOptions opts;
  opts.hash_threads = in.hash_threads;
  opts.intra_op_threads = in.intra_op_threads;
  // Cross-architecture: the norm bucket tolerates another class's bits.
  opts.other_hardware_class = in.mode == VerifyMode::kNormBucket;
  opts.rates = std::make_pair(rates[0], rates[1]);
  opts.run_id = in.commitment->run_id();
  const VerifyResult before = r;
  StepResult s;
  if (auto bad = replay(*program, in, served, opts, r, s)) return *bad;
  VerifyResult verdict = compare(in, o, served.pre, s, r);
  if (auto program_fault = thread_dependent(*program, in, o, served, opts, before, verdict)) return *program_fault;
  if (auto program_fault = seed_ignored(*program, in, served, opts, s, verdict)) return *program_fault;
  return verdict;
}

}  // namespace pot::replay
