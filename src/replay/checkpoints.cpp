#include "replay/checkpoints.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include "repro_aten/gate.h"
#include "commit/opening.h"
#include "spec/seed.h"
#include "data/stream_json.h"
#include "common/error.h"
#include "common/files.h"
#include "common/tempfile.h"
#include "hash/finite.h"
#include "hash/state.h"
#include "hash/update_norm.h"
#include "statecheck/state_stats.h"
#include "merkle/proof.h"
#include "replay/hardware_probe.h"
#include "replay/optimizers.h"
#include "replay/replay.h"
#include "replay/torch_util.h"

namespace fs = std::filesystem;

namespace pot::replay {
namespace {

constexpr std::string_view kFormat = "pot-checkpoints/3";
constexpr uint64_t kMaxScheduleFileBytes = uint64_t{1} << 34;  // 16 GiB

std::string numbered(const std::string &dir, const char *sub, uint64_t t) {
  return fmt::format("{}/{}/{:012d}.safetensors", dir, sub, t);
}

// S_t's statistics table (docs/PROTOCOL.md 5.2), whose digest leaf t commits.
std::string stats_path(const std::string &dir, uint64_t t) { return fmt::format("{}/stats/{:012d}.stats", dir, t); }

std::string sample_path(const std::string &dataset_dir, uint64_t index) {
  return fmt::format("{}/{:06d}.safetensors", dataset_dir, index);
}

// Writes a small file atomically (a temporary file of its own, then rename).
void write_all(const std::string &path, ByteView data) {
  const std::string tmp = temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(Status::kIo, "cannot create '{}': {}", tmp, std::strerror(errno));
    out.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) fail(Status::kIo, "cannot write '{}'", tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    fail(Status::kIo, "cannot rename '{}' to '{}': {}", tmp, path, why);
  }
}

void write_text(const std::string &path, const std::string &text) {
  write_all(path, ByteView(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

// schedule.bin: for each entry, u32le(length) || entry bytes.
Bytes encode_schedule(const std::vector<Bytes> &entries) {
  Bytes out;
  for (const Bytes &e : entries) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

std::vector<Bytes> decode_schedule(ByteView b) {
  std::vector<Bytes> entries;
  size_t off = 0;
  while (off < b.size()) {
    if (b.size() - off < 4) fail(Status::kMalformed, "schedule.bin: truncated length");
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= uint32_t{b[off + static_cast<size_t>(i)]} << (8 * i);
    off += 4;
    if (b.size() - off < n) fail(Status::kMalformed, "schedule.bin: truncated entry");
    entries.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(off), b.begin() + static_cast<std::ptrdiff_t>(off + n));
    off += n;
  }
  return entries;
}

hash::Digest schedule_root(const std::vector<Bytes> &entries) {
  auto tree = merkle::StoredTree::in_memory();
  for (const Bytes &e : entries) tree->append(e);
  return tree->root();
}

const hash::StTensor *find(const std::vector<hash::StTensor> &state, std::string_view name) {
  for (const hash::StTensor &t : state)
    if (t.meta.name == name) return &t;
  return nullptr;
}

// An optimizer entry of S_0 that is the optimizer's fresh state
// (docs/PROTOCOL.md 21.1: Adagrad's step 0 and initial accumulator, made by
// its constructor), bit for bit; the replay of step 1 checks the whole set.
bool is_fresh_entry(const spec::ExecutionSpec &spec, const std::vector<hash::StTensor> &s0,
                    const hash::StTensor &entry) {
  const std::string_view rest = std::string_view(entry.meta.name).substr(kOptimPrefix.size());
  const size_t slash = rest.rfind('/');
  if (slash == std::string_view::npos) return false;
  const std::string param(rest.substr(0, slash)), key(rest.substr(slash + 1));
  const spec::OptimizerSpec &o = spec.group_optimizer(spec.group_of(param));
  if (!constructs_state(o)) return false;
  const hash::StTensor *p = find(s0, std::string(kParamPrefix) + param);
  if (!p) return false;
  const std::map<std::string, at::Tensor> fresh = fresh_state(o, tensor_from_bytes(p->meta, p->data));
  auto it = fresh.find(key);
  if (it == fresh.end() || from_torch(it->second.scalar_type(), key) != entry.meta.dtype) return false;
  const at::Tensor want = it->second.contiguous();
  const at::Tensor held = tensor_from_bytes(entry.meta, entry.data);
  return held.sizes() == want.sizes() && want.nbytes() == entry.data.size() &&
         std::memcmp(want.data_ptr(), entry.data.data(), entry.data.size()) == 0;
}

std::string bits_hex(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return fmt::format("{:016x}", b);
}

double bits_from_hex(const std::string &h, const char *field) {
  if (h.size() != 16 || h.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail(Status::kMalformed, "steps.jsonl: {} must be 16 lower-case hex digits", field);
  const uint64_t b = std::stoull(h, nullptr, 16);
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

// The parameters of a state, copied (the caller's tensors change with the
// next optimizer step) and in bytewise name order, as the update norm needs.
struct ParamCopy {
  hash::TensorMeta meta;
  Bytes data;
};

std::vector<ParamCopy> copy_params(const std::vector<hash::StTensor> &state) {
  std::vector<ParamCopy> out;
  for (const hash::StTensor &t : state)
    if (t.meta.name.rfind(hash::kLeafNormPrefix, 0) == 0) out.push_back({t.meta, Bytes(t.data.begin(), t.data.end())});
  std::sort(out.begin(), out.end(), [](const ParamCopy &a, const ParamCopy &b) { return a.meta.name < b.meta.name; });
  return out;
}

std::vector<hash::StTensor> param_views(const std::vector<ParamCopy> &params) {
  std::vector<hash::StTensor> out;
  out.reserve(params.size());
  for (const ParamCopy &p : params) out.push_back({p.meta, p.data});
  return out;
}

// pot-run.json: the spec and the checkpoint interval.
struct RunMeta {
  spec::ExecutionSpec spec;
  uint64_t every = 1;
};

RunMeta read_meta(const std::string &dir) {
  if (!fs::exists(dir + "/pot-run.json")) fail(Status::kNotFound, "'{}' is not a checkpoint directory (no pot-run.json)", dir);
  const Bytes meta_bytes = read_all(dir + "/pot-run.json", 1 << 20);
  RunMeta r;
  try {
    const nlohmann::json meta = nlohmann::json::parse(meta_bytes.begin(), meta_bytes.end());
    if (meta.at("format").get<std::string>() != kFormat)
      fail(Status::kUnsupported, "'{}/pot-run.json': format {} is not {} (directories of protocol version 1, "
           "pot-checkpoints/1, and of pot 0.2, pot-checkpoints/2 with version-2 step leaves, cannot be opened: "
           "record the run again)", dir, meta.at("format").dump(), kFormat);
    r.spec = spec::ExecutionSpec::decode(from_hex(meta.at("spec").get<std::string>()));
    r.every = meta.at("checkpoint_every").get<uint64_t>();
  } catch (const nlohmann::json::exception &e) {
    fail(Status::kMalformed, "'{}/pot-run.json': {}", dir, e.what());
  }
  if (r.every == 0) fail(Status::kMalformed, "'{}/pot-run.json': checkpoint_every is 0", dir);
  return r;
}

// steps.jsonl, one record per line in step order. With torn_tail, a last
// line without its newline (a write the process did not finish) is left
// out.
std::vector<StepRecord> read_steps(const std::string &dir, bool torn_tail) {
  const std::string path = dir + "/steps.jsonl";
  std::vector<StepRecord> steps;
  if (!fs::exists(path)) return steps;
  const Bytes text = read_all(path, uint64_t{1} << 36);
  size_t at = 0;
  while (at < text.size()) {
    const auto nl = std::find(text.begin() + static_cast<std::ptrdiff_t>(at), text.end(), uint8_t{'\n'});
    if (nl == text.end() && torn_tail) break;
    const std::string line(text.begin() + static_cast<std::ptrdiff_t>(at), nl);
    at = static_cast<size_t>(nl - text.begin()) + (nl == text.end() ? 0 : 1);
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      StepRecord r;
      r.step = j.at("step").get<uint64_t>();
      r.state_digest = hash::Digest::from_hex(j.at("state_digest").get<std::string>());
      r.loss = bits_from_hex(j.at("loss_bits").get<std::string>(), "loss_bits");
      r.update_norm = bits_from_hex(j.at("update_norm_bits").get<std::string>(), "update_norm_bits");
      r.stats_digest = hash::Digest::from_hex(j.at("stats_digest").get<std::string>());
      if (r.step != steps.size() + 1)
        fail(Status::kMalformed, "'{}': line {} is for step {}", path, steps.size() + 1, r.step);
      steps.push_back(r);
    } catch (const nlohmann::json::exception &e) {
      fail(Status::kMalformed, "'{}' line {}: {}", path, steps.size() + 1, e.what());
    }
  }
  return steps;
}

// commitment.bin and schedule.bin, the schedule checked against the
// commitment (kMalformed otherwise).
std::pair<commit::TrainingCommitment, std::vector<Bytes>> read_commitment(const std::string &dir) {
  auto c = commit::TrainingCommitment::decode(read_all(dir + "/commitment.bin", commit::kMaxCommitmentBytes));
  auto schedule = decode_schedule(read_all(dir + "/schedule.bin", kMaxScheduleFileBytes));
  if (schedule.size() != c.declared_steps || schedule_root(schedule) != c.schedule_root)
    fail(Status::kMalformed, "'{}': schedule.bin does not match the commitment", dir);
  return {std::move(c), std::move(schedule)};
}

// Leaves 1..count of the log are the ones steps.jsonl's records rebuild
// (kMalformed naming the first that differs).
void check_leaves(const std::string &dir, const merkle::StoredTree &log, const hash::Digest &run_id,
                  const std::vector<StepRecord> &steps, uint64_t count) {
  for (uint64_t t = 1; t <= count; ++t) {
    const StepRecord &r = steps[t - 1];
    if (r.step != t || log.leaf_hash(t - 1) != r.leaf(run_id).leaf_hash())
      fail(Status::kMalformed, "'{}': steps.jsonl and the log disagree at step {}", dir, t);
  }
}

std::string step_line(const StepRecord &r) {
  const nlohmann::json line = {{"step", r.step},
                               {"state_digest", r.state_digest.hex()},
                               {"loss_bits", bits_hex(r.loss)},
                               {"update_norm_bits", bits_hex(r.update_norm)},
                               {"stats_digest", r.stats_digest.hex()}};
  return line.dump() + "\n";
}

}  // namespace

// ---------------------------------------------------------------------------
// Recorder

struct Recorder::Impl {
  std::string dir;
  spec::ExecutionSpec spec;
  uint64_t every = 1;
  unsigned threads = 0;
  std::unique_ptr<merkle::StoredTree> log;
  std::ofstream steps;
  bool started = false;
  hash::Digest initial;
  std::optional<commit::TrainingCommitment> commitment;
  uint64_t begun = 0;  // step begun and not ended, 0 when none
  // pot-repro/1: the begun step's operators compute in the arithmetic, on
  // the thread that began it (PROTOCOL 14.6).
  std::unique_ptr<repro_aten::Scope> repro;
  // A begun step the gate voided: the scope ended when it was refused (the
  // thread computes natively again), and every later end_step of it is
  // refused with the same status and message.
  std::optional<std::pair<Status, std::string>> voided;
  Bytes last_rng;      // rng/cpu of the last recorded state (single_seed)
  // The parameters of the last recorded state: leaf t commits the update
  // norm from S_{t-1} to S_t (one copy of the weights).
  std::vector<ParamCopy> last_params;
  // The rates of the spec's schedule, one sequence per parameter group,
  // walked forward as steps are recorded.
  std::vector<spec::LrSequence> rates;
  uint64_t resumed = 0;  // resume(): the step continued after
  // Whether every opening of the run can carry its run record (checked on
  // the first state recorded, which holds the optimizer state S_0 lacks).
  bool record_checked = false;

  // Every opening carries every leaf and table of the run (PROTOCOL 18): a
  // run whose record cannot fit a manifest could never be opened, so it is
  // refused after one step, not after the whole run.
  void check_record_fits(uint64_t table_bytes, size_t tensors) {
    const uint64_t n = commitment->declared_steps;
    const uint64_t bytes = commit::run_record_bytes(n, table_bytes);
    if (bytes > commit::kMaxManifestBytes)
      fail(Status::kLimit,
           "end_step: every opening of the run carries its run record (each step's leaf and statistics table, "
           "docs/PROTOCOL.md 18): {} bytes for {} steps of a state of {} tensors ({}-byte tables), past the "
           "opening manifest's bound of {} bytes; a run of this state declares at most {} steps",
           bytes, n, tensors, table_bytes, commit::kMaxManifestBytes, commit::max_recorded_steps(table_bytes));
    record_checked = true;
  }
  std::vector<double> rate_values;  // group g's rate of step rates[g].steps_done()

  // Group g's rate of `step`; steps asked for never decrease.
  double rate(uint64_t step, size_t g = 0) {
    if (rates.empty()) {
      for (size_t i = 0; i < spec.group_count(); ++i) rates.emplace_back(spec.lr_schedule, spec.group_optimizer(i).lr);
      rate_values.assign(spec.group_count(), 0);
    }
    while (rates[g].steps_done() < step) rate_values[g] = rates[g].next();
    return rate_values[g];
  }

  // What is wrong with the rates `state` holds for `step` (every group's
  // hparam/lr, docs/PROTOCOL.md 21.1), or nullopt.
  std::optional<std::string> rates_mismatch(const std::vector<hash::StTensor> &state, uint64_t step) {
    for (size_t g = 0; g < spec.group_count(); ++g)
      if (auto bad = learning_rate_mismatch(state_learning_rate(state, group_lr_name(g)), rate(step, g), step,
                                            group_lr_name(g)))
        return g == 0 ? *bad : fmt::format("parameter group {}: {}", g, *bad);
    return std::nullopt;
  }
};

std::unique_ptr<Recorder> Recorder::create(const std::string &dir, const spec::ExecutionSpec &spec,
                                           const std::string &program_path, uint64_t checkpoint_every,
                                           unsigned hash_threads) {
  spec.validate();
  if (checkpoint_every == 0) fail(Status::kInvalidArgument, "checkpoint_every must be >= 1");
  const hash::Digest d = spec::program_digest_file(program_path);
  if (d != spec.model_program_digest)
    fail(Status::kProofMismatch, "model program '{}': digest {} is not the spec's model_program_digest {}",
         program_path, d.hex(), spec.model_program_digest.hex());
  // A spec this build cannot replay (another framework, version, attention
  // backend) would have every step refused by its verifiers: refused here,
  // before training. So is a hardware class this process does not compute
  // as: the trainer's steps would not be the spec's, and a bitwise verifier
  // of the spec's class would fail them.
  try {
    check_replayable(spec);
  } catch (const Error &e) {
    fail(e.status(), "recorder: every verifier of this build would refuse the run's steps: {}", e.what());
  }
  try {
    check_hardware_class(spec);
  } catch (const Error &e) {
    fail(e.status(), "recorder: this process would not train the spec's steps: {}", e.what());
  }
  // Nothing is written for a spec refused above.
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(Status::kIo, "cannot create '{}': {}", dir, ec.message());
  if (fs::exists(dir + "/pot-run.json") || fs::exists(dir + "/log.tree"))
    fail(Status::kConflict, "'{}' already holds a recorded run", dir);
  fs::copy_file(program_path, dir + "/program.pt", fs::copy_options::overwrite_existing, ec);
  if (ec) fail(Status::kIo, "cannot copy '{}' into '{}': {}", program_path, dir, ec.message());
  for (const char *sub : {"checkpoints", "stats"}) {
    fs::create_directories(dir + "/" + sub, ec);
    if (ec) fail(Status::kIo, "cannot create '{}/{}': {}", dir, sub, ec.message());
  }

  std::unique_ptr<Recorder> r(new Recorder());
  r->impl_ = std::make_unique<Impl>();
  Impl &m = *r->impl_;
  m.dir = dir;
  m.spec = spec;
  m.every = checkpoint_every;
  m.threads = hash_threads;
  const nlohmann::json meta = {{"format", kFormat}, {"spec", to_hex(spec.encode())}, {"checkpoint_every", checkpoint_every}};
  write_text(dir + "/pot-run.json", meta.dump(1) + "\n");
  m.log = merkle::StoredTree::open(dir + "/log.tree");
  m.steps.open(dir + "/steps.jsonl", std::ios::binary | std::ios::trunc);
  if (!m.steps) fail(Status::kIo, "cannot create '{}/steps.jsonl'", dir);
  return r;
}

std::unique_ptr<Recorder> Recorder::resume(const std::string &dir, unsigned hash_threads) {
  RunMeta meta = read_meta(dir);
  if (!fs::exists(dir + "/commitment.bin") || !fs::exists(dir + "/schedule.bin"))
    fail(Status::kState, "'{}' holds no commitment: the run never began a step; start it again in an empty directory",
         dir);
  const commit::TrainingCommitment c = read_commitment(dir).first;
  if (c.spec_digest != meta.spec.digest())
    fail(Status::kMalformed, "'{}': the commitment names the spec {}, pot-run.json holds {}", dir, c.spec_digest.hex(),
         meta.spec.digest().hex());
  if (spec::program_digest_file(dir + "/program.pt") != meta.spec.model_program_digest)
    fail(Status::kMalformed, "'{}/program.pt' is not the spec's model program", dir);
  check_replayable(meta.spec);
  check_hardware_class(meta.spec);

  // The whole records: lines ending in a newline, appends not torn.
  const std::vector<StepRecord> steps = read_steps(dir, true);
  const std::string log_path = dir + "/log.tree";
  const uint64_t logged = fs::exists(log_path) ? merkle::tree_file_leaves(log_path) : 0;
  const uint64_t whole = std::min<uint64_t>(steps.size(), logged);
  // The last checkpoint within them whose file is the recorded state.
  auto recorded = [&](uint64_t t) { return t == 0 ? c.initial_state_digest : steps[t - 1].state_digest; };
  uint64_t at = whole;
  for (;; --at) {
    const std::string ck = numbered(dir, "checkpoints", at);
    if (fs::exists(ck)) {
      try {
        if (hash::SafetensorsFile::open(ck)->digest(hash_threads) == recorded(at)) break;
      } catch (const Error &) {
        // A damaged checkpoint: an earlier one serves.
      }
    }
    if (at == 0) fail(Status::kMalformed, "'{}': no checkpoint, not even S_0, holds the state the run recorded", dir);
  }
  // Cut everything after it back; the leaves kept must be the records'.
  if (fs::exists(log_path)) merkle::truncate_tree_file(log_path, at);
  auto log = merkle::StoredTree::open(log_path);
  check_leaves(dir, *log, c.run_id(), steps, at);
  std::string lines;
  for (uint64_t t = 1; t <= at; ++t) lines += step_line(steps[t - 1]);
  write_text(dir + "/steps.jsonl", lines);
  std::error_code ec;
  for (const char *sub : {"checkpoints", "derived", "stats"}) {
    if (!fs::exists(dir + "/" + sub)) continue;
    const std::string ext = std::string_view(sub) == "stats" ? ".stats" : ".safetensors";
    for (const auto &e : fs::directory_iterator(dir + "/" + sub)) {
      const std::string name = e.path().filename().string();
      // %012d<ext> past the step, and temporary files of writes the
      // process did not finish.
      const bool numbered_file = name.size() == 12 + ext.size() && name.compare(12, ext.size(), ext) == 0 &&
                                 name.find_first_not_of("0123456789") == 12;
      if (!numbered_file || std::stoull(name.substr(0, 12)) > at) fs::remove(e.path(), ec);
    }
  }

  std::unique_ptr<Recorder> r(new Recorder());
  r->impl_ = std::make_unique<Impl>();
  Impl &m = *r->impl_;
  m.dir = dir;
  m.spec = std::move(meta.spec);
  m.every = meta.every;
  m.threads = hash_threads;
  m.log = std::move(log);
  m.steps.open(dir + "/steps.jsonl", std::ios::binary | std::ios::app);
  if (!m.steps) fail(Status::kIo, "cannot open '{}/steps.jsonl'", dir);
  m.started = true;
  m.initial = c.initial_state_digest;
  m.commitment = c;
  m.resumed = at;
  // What end_step(at) kept: S_at's parameters and generator state.
  const auto state = hash::SafetensorsFile::open(numbered(dir, "checkpoints", at));
  const std::vector<hash::StTensor> tensors = hash::tensor_views(*state);
  m.last_params = copy_params(tensors);
  if (m.spec.seed_policy == spec::SeedPolicyKind::kSingleSeed) {
    const hash::StTensor *rng = find(tensors, kRngName);
    if (!rng) fail(Status::kMalformed, "'{}': checkpoint {} has no '{}' tensor", dir, at, kRngName);
    m.last_rng.assign(rng->data.begin(), rng->data.end());
  }
  return r;
}

uint64_t Recorder::resumed_step() const { return impl_->resumed; }
std::string Recorder::resumed_state_path() const { return numbered(impl_->dir, "checkpoints", impl_->resumed); }

Recorder::~Recorder() = default;

hash::Digest Recorder::start(const std::vector<hash::StTensor> &s0) {
  Impl &m = *impl_;
  if (m.started) fail(Status::kState, "start: S_0 is already recorded");
  hash::StateBuilder b(m.threads);
  for (const hash::StTensor &t : s0) b.add_tensor(t.meta, t.data);
  if (auto bad = m.rates_mismatch(s0, 1))
    fail(Status::kInvalidArgument, "start: S_0 holds {}", *bad);
  // What a verifier refuses (docs/PROTOCOL.md 21.3, check nonfinite; the
  // fresh optimizer state of S_0) is refused here, before training.
  if (auto bad = hash::nonfinite_tensor(s0)) fail(Status::kNonFinite, "start: S_0: {}", *bad);
  if (auto bad = hash::subnormal_excess(hash::subnormal_census(s0)))
    fail(Status::kInvalidArgument, "start: S_0: {}; every verifier refuses such a state (check subnormal)", *bad);
  for (const hash::StTensor &t : s0)
    if (t.meta.name.rfind(kOptimPrefix, 0) == 0 && !is_fresh_entry(m.spec, s0, t))
      fail(Status::kInvalidArgument,
           "start: S_0 holds optimizer state '{}': a run starts from the optimizer's fresh state (record S_0 "
           "before the first optimizer step)",
           t.meta.name);
  if (m.spec.seed_policy == spec::SeedPolicyKind::kSingleSeed) {
    const hash::StTensor *rng = find(s0, kRngName);
    if (!rng) fail(Status::kInvalidArgument, "seed policy single_seed: S_0 has no '{}' tensor", kRngName);
    m.last_rng.assign(rng->data.begin(), rng->data.end());
  }
  m.last_params = copy_params(s0);
  if (m.last_params.empty())
    fail(Status::kInvalidArgument, "start: S_0 has no tensor named '{}*': a step leaf commits the norm of their update",
         hash::kLeafNormPrefix);
  hash::write_safetensors(numbered(m.dir, "checkpoints", 0), s0, {});
  m.initial = b.digest();
  m.started = true;
  return m.initial;
}

void Recorder::set_commitment(const commit::TrainingCommitment &c, const std::vector<Bytes> &schedule) {
  Impl &m = *impl_;
  if (!m.started) fail(Status::kState, "set_commitment: record S_0 (start) first");
  if (m.log->size() > 0 || m.begun) fail(Status::kState, "set_commitment: training has already begun");
  c.validate();
  if (c.spec_digest != m.spec.digest())
    fail(Status::kProofMismatch, "the commitment's spec digest {} is not the recorder's spec {}", c.spec_digest.hex(),
         m.spec.digest().hex());
  if (c.initial_state_digest != m.initial)
    fail(Status::kProofMismatch, "the commitment's initial state {} is not the recorded S_0 {}",
         c.initial_state_digest.hex(), m.initial.hex());
  if (schedule.size() != c.declared_steps)
    fail(Status::kInvalidArgument, "{} schedule entries given, the commitment declares {}", schedule.size(),
         c.declared_steps);
  for (size_t i = 0; i < schedule.size(); ++i) {
    const commit::ScheduleEntry e = commit::ScheduleEntry::decode(schedule[i]);
    if (e.step != i + 1) fail(Status::kInvalidArgument, "schedule entry {} is for step {}", i + 1, e.step);
    e.encode(c.dataset_size);  // indices below the dataset size
  }
  if (schedule_root(schedule) != c.schedule_root)
    fail(Status::kProofMismatch, "the schedule entries do not hash to the commitment's schedule root");
  write_all(m.dir + "/schedule.bin", encode_schedule(schedule));
  write_all(m.dir + "/commitment.bin", c.encode());
  m.commitment = c;
}

uint64_t Recorder::begin_step(uint64_t t) {
  Impl &m = *impl_;
  if (!m.started) fail(Status::kState, "begin_step: record S_0 (start) first");
  if (m.begun) fail(Status::kState, "begin_step({}): step {} has not ended", t, m.begun);
  if (t != m.log->size() + 1) fail(Status::kState, "begin_step({}): the next step is {}", t, m.log->size() + 1);
  // Step leaves and per-step seeds name the run: it is known before it trains.
  if (!m.commitment)
    fail(Status::kState, "begin_step({}): the step's leaf{} names the run; set the commitment (set_commitment) first",
         t, m.spec.seed_policy == spec::SeedPolicyKind::kPerStep ? " (and, under per_step, its seed)" : "");
  if (t > m.commitment->declared_steps)
    fail(Status::kOutOfRange, "begin_step({}): the commitment declares {} steps", t, m.commitment->declared_steps);
  uint64_t seed = 0;
  std::lock_guard<std::mutex> lock(torch_state_mutex());
  auto gen = at::detail::getDefaultCPUGenerator();
  if (m.spec.seed_policy == spec::SeedPolicyKind::kPerStep) {
    seed = spec::derive_seed(m.spec.seed, m.commitment->run_id(), t);
    std::lock_guard<std::mutex> g(gen.mutex());
    gen.set_current_seed(seed);
  } else if (m.spec.seed_policy == spec::SeedPolicyKind::kSingleSeed) {
    at::Tensor st = at::empty({static_cast<int64_t>(m.last_rng.size())}, at::kByte);
    std::memcpy(st.data_ptr(), m.last_rng.data(), m.last_rng.size());
    std::lock_guard<std::mutex> g(gen.mutex());
    gen.set_state(st);
  }
  if (m.spec.reproducible()) m.repro = std::make_unique<repro_aten::Scope>();
  m.begun = t;
  return seed;
}

commit::StepLeaf Recorder::end_step(const std::vector<hash::StTensor> &state, double loss) {
  Impl &m = *impl_;
  if (!m.begun) fail(Status::kState, "end_step: no step begun (call begin_step first)");
  // An operator computed outside pot-repro/1 voids the step: it is refused
  // (again at every later end_step of it), never recorded.
  if (m.repro) {
    try {
      m.repro->check();
    } catch (const Error &e) {
      m.voided.emplace(e.status(), fmt::format("end_step: step {}: {}", m.begun, e.what()));
    }
    m.repro.reset();
  }
  if (m.voided) fail(m.voided->first, "{}", m.voided->second);
  if (!std::isfinite(loss))
    fail(Status::kNonFinite, "end_step: step {} has the loss {}; a step with a non-finite loss fails verification",
         m.begun, loss);
  // One read of S_t gives its tensor digests and its statistics (PROTOCOL
  // 5.2), whose counts say whether the state holds a non-finite or
  // subnormal value (the scans that name it run only then).
  std::vector<hash::StTensor> by_name = state;
  std::sort(by_name.begin(), by_name.end(),
            [](const hash::StTensor &x, const hash::StTensor &y) { return x.meta.name < y.meta.name; });
  for (size_t i = 1; i < by_name.size(); ++i)
    if (by_name[i].meta.name == by_name[i - 1].meta.name)
      fail(Status::kDuplicate, "tensor '{}' is already in the state", by_name[i].meta.name);
  const statecheck::DigestedState read = statecheck::digest_and_stats(by_name, m.threads);
  const statecheck::StateStats &stats = read.stats;
  if (stats.any(&statecheck::TensorStats::nonfinite))
    if (auto bad = hash::nonfinite_tensor(state))
      fail(Status::kNonFinite, "end_step: S_{}: {}; a non-finite state fails verification", m.begun, *bad);
  if (stats.any(&statecheck::TensorStats::subnormal))
    if (auto bad = hash::subnormal_excess(hash::subnormal_census(state)))
      fail(Status::kInvalidArgument, "end_step: S_{}: {}; every verifier refuses such a state (check subnormal)",
           m.begun, *bad);
  if (auto bad = m.rates_mismatch(state, m.begun + 1))
    fail(Status::kInvalidArgument, "end_step: S_{} holds {}", m.begun, *bad);
  const Bytes table = stats.encode();
  if (!m.record_checked) m.check_record_fits(table.size(), stats.tensors.size());
  hash::StateBuilder b(m.threads);
  for (size_t i = 0; i < by_name.size(); ++i) b.add_tensor_digest(by_name[i].meta.name, read.tensor_digests[i]);
  const hash::Digest digest = b.digest();
  const uint64_t t = m.begun;
  // The committed update norm; the states' parameters must match (a
  // verifier refuses a step whose parameters change name, dtype or shape).
  std::vector<ParamCopy> params = copy_params(state);
  double norm = 0;
  try {
    norm = hash::update_norm(param_views(m.last_params), param_views(params), std::string(hash::kLeafNormPrefix));
  } catch (const Error &e) {
    fail(e.status(), "end_step: the update norm from S_{} to S_{}: {}", t - 1, t, e.what());
  }
  if (!std::isfinite(norm))
    fail(Status::kNonFinite, "end_step: the parameters of S_{} are {} away from S_{}; a verifier refuses the step", t,
         norm, t - 1);
  if (m.spec.seed_policy == spec::SeedPolicyKind::kSingleSeed) {
    const hash::StTensor *rng = find(state, kRngName);
    if (!rng) fail(Status::kInvalidArgument, "seed policy single_seed: S_{} has no '{}' tensor", t, kRngName);
    m.last_rng.assign(rng->data.begin(), rng->data.end());
  }
  const bool last = t == m.commitment->declared_steps;
  if (t % m.every == 0 || last) hash::write_safetensors(numbered(m.dir, "checkpoints", t), state, {});
  // S_t's statistics (PROTOCOL 5.2): the table is kept, its digest committed.
  write_text(stats_path(m.dir, t), std::string(table.begin(), table.end()));
  const commit::StepLeaf leaf{m.commitment->run_id(), t, digest, loss, norm, stats.digest()};
  m.log->append(leaf.encode());
  m.log->flush();
  m.steps << step_line({t, digest, loss, norm, leaf.stats_digest});
  m.steps.flush();
  if (!m.steps) fail(Status::kIo, "cannot append to '{}/steps.jsonl'", m.dir);
  m.last_params = std::move(params);
  m.begun = 0;
  return leaf;
}

uint64_t Recorder::size() const { return impl_->log->size(); }
hash::Digest Recorder::root(uint64_t size) const {
  if (size > impl_->log->size()) fail(Status::kOutOfRange, "root({}): the log has {} leaves", size, impl_->log->size());
  return impl_->log->root(size);
}
std::vector<hash::Digest> Recorder::consistency_proof(uint64_t a, uint64_t b) const {
  return impl_->log->consistency_proof(a, b);
}

hash::Digest Recorder::finish() {
  Impl &m = *impl_;
  if (m.begun) fail(Status::kState, "finish: step {} has not ended", m.begun);
  if (m.commitment && m.log->size() != m.commitment->declared_steps)
    fail(Status::kState, "finish: {} steps recorded, the commitment declares {}", m.log->size(),
         m.commitment->declared_steps);
  m.log->flush();
  return m.log->root();
}

// ---------------------------------------------------------------------------
// CheckpointStore

struct CheckpointStore::Impl {
  std::string dir;
  spec::ExecutionSpec spec;
  uint64_t every = 1;
  std::vector<StepRecord> steps;  // steps[t-1]
  std::unique_ptr<merkle::StoredTree> log;
  std::optional<commit::TrainingCommitment> commitment;
  std::vector<Bytes> schedule;
  std::unique_ptr<Program> program;
  // The dataset the openings and re-derivations read, built on first use:
  // a tree over a directory of samples, or a stream's token files.
  std::unique_ptr<merkle::StoredTree> dataset;
  std::optional<data::StreamFiles> stream;
  std::string dataset_dir;

  commit::StepLeaf leaf(const StepRecord &r) const { return r.leaf(commitment->run_id()); }
  // S_t's statistics table as kept in stats/, checked against the record.
  Bytes table(uint64_t t) const {
    const std::string path = stats_path(dir, t);
    Bytes b = read_all(path, statecheck::kMaxTableBytes);
    if (statecheck::table_digest(b) != steps[t - 1].stats_digest)
      fail(Status::kMalformed, "'{}' is not the statistics table steps.jsonl records for S_{}", path, t);
    return b;
  }
  std::vector<Bytes> tables(uint64_t log_size) const {
    std::vector<Bytes> out;
    for (uint64_t t = 1; t <= log_size; ++t) out.push_back(table(t));
    return out;
  }
  const Bytes &entry(uint64_t t) const {
    if (t == 0 || t > schedule.size())
      fail(Status::kNotFound, "no schedule entry for step {} (set_commitment records the schedule)", t);
    return schedule[t - 1];
  }
  Program &prog() {
    if (!program) program = Program::load(dir + "/program.pt", spec);
    return *program;
  }
  // Opens the dataset at ddir (a directory of samples, or a stream file or
  // a directory holding stream.json) and checks it against the commitment.
  void use_dataset(const std::string &ddir) {
    if (!commitment) fail(Status::kState, "the checkpoint directory has no commitment");
    if ((dataset || stream) && dataset_dir == ddir) return;
    dataset.reset();
    stream.reset();
    if (const auto file = data::stream_file_of(ddir)) {
      data::StreamFiles f = data::read_stream_file(*file);
      if (f.dataset().root() != commitment->dataset_root)
        fail(Status::kProofMismatch, "the stream '{}' has the root {}, the committed dataset root is {}", *file,
             f.dataset().root().hex(), commitment->dataset_root.hex());
      if (f.dataset().size() != commitment->dataset_size)
        fail(Status::kProofMismatch, "the stream '{}' has {} windows, the committed dataset size is {}", *file,
             f.dataset().size(), commitment->dataset_size);
      stream.emplace(std::move(f));
    } else {
      auto tree = merkle::StoredTree::in_memory();
      for (uint64_t i = 0; i < commitment->dataset_size; ++i)
        tree->append(commit::sample_digest(read_all(sample_path(ddir, i), commit::kMaxSampleBytes)).view());
      if (tree->root() != commitment->dataset_root)
        fail(Status::kProofMismatch, "the samples in '{}' do not hash to the committed dataset root", ddir);
      dataset = std::move(tree);
    }
    dataset_dir = ddir;
  }
  // Sample `index` of the dataset in use (a stream's window is checked
  // against its shard root).
  Bytes sample(uint64_t index) {
    if (stream) return stream->sample(index);
    return read_all(sample_path(dataset_dir, index), commit::kMaxSampleBytes);
  }
  // The opening of the samples of a schedule entry.
  void open_samples(commit::OpeningManifest &o, const std::vector<uint64_t> &indices) {
    if (stream) o.stream = stream->dataset().encode();
    for (uint64_t idx : indices) {
      if (stream)
        o.samples.push_back({idx, {}, {}, stream->prove(idx).encode()});
      else
        o.samples.push_back({idx, sample(idx), merkle::encode_proof(dataset->inclusion_proof(idx, commitment->dataset_size)), {}});
    }
  }
};

std::unique_ptr<CheckpointStore> CheckpointStore::open(const std::string &dir) {
  std::unique_ptr<CheckpointStore> s(new CheckpointStore());
  s->impl_ = std::make_unique<Impl>();
  Impl &m = *s->impl_;
  m.dir = dir;
  RunMeta meta = read_meta(dir);
  m.spec = std::move(meta.spec);
  m.every = meta.every;
  m.steps = read_steps(dir, false);
  m.log = merkle::StoredTree::open(dir + "/log.tree");
  if (m.log->size() != m.steps.size())
    fail(Status::kMalformed, "'{}': the log has {} leaves, steps.jsonl {} lines", dir, m.log->size(), m.steps.size());
  if (fs::exists(dir + "/commitment.bin")) {
    auto [c, schedule] = read_commitment(dir);
    m.commitment = std::move(c);
    m.schedule = std::move(schedule);
    check_leaves(dir, *m.log, m.commitment->run_id(), m.steps, m.steps.size());
  } else if (!m.steps.empty()) {
    fail(Status::kMalformed, "'{}': steps are recorded but there is no commitment.bin (step leaves name the run)", dir);
  }
  return s;
}

CheckpointStore::~CheckpointStore() = default;
uint64_t CheckpointStore::size() const { return impl_->steps.size(); }
uint64_t CheckpointStore::checkpoint_every() const { return impl_->every; }
const spec::ExecutionSpec &CheckpointStore::spec() const { return impl_->spec; }
const StepRecord &CheckpointStore::step(uint64_t t) const {
  if (t == 0 || t > impl_->steps.size()) fail(Status::kOutOfRange, "step {} of a run of {} steps", t, impl_->steps.size());
  return impl_->steps[t - 1];
}

std::string CheckpointStore::state_path(uint64_t t, const std::string &dataset_dir, uint64_t *replayed) {
  Impl &m = *impl_;
  if (t > m.steps.size()) fail(Status::kOutOfRange, "state {} of a run of {} steps", t, m.steps.size());
  if (replayed) *replayed = 0;
  // A stored or cached state is served only after its digest is checked
  // against the log (or, for S_0, the commitment): a corrupted file is
  // reported here rather than by the verifier.
  auto logged = [&]() -> std::optional<hash::Digest> {
    if (t > 0) return m.steps[t - 1].state_digest;
    if (m.commitment) return m.commitment->initial_state_digest;
    return std::nullopt;
  };
  const std::string ck = numbered(m.dir, "checkpoints", t);
  if (fs::exists(ck)) {
    const auto want = logged();
    if (want && hash::SafetensorsFile::open(ck)->digest(0) != *want)
      fail(Status::kProofMismatch, "checkpoint '{}' does not digest to the state the log records", ck);
    return ck;
  }
  const std::string derived = numbered(m.dir, "derived", t);
  if (fs::exists(derived)) {
    if (hash::SafetensorsFile::open(derived)->digest(0) == m.steps[t - 1].state_digest) return derived;
    std::error_code ec;
    fs::remove(derived, ec);  // a stale or damaged cache entry: derive it again
  }
  // The nearest checkpoint before t (S_0 always exists).
  uint64_t c = t;
  while (c > 0 && !fs::exists(numbered(m.dir, "checkpoints", c))) --c;
  const std::string base = numbered(m.dir, "checkpoints", c);
  auto file = hash::SafetensorsFile::open(base);
  if (c == 0 && !m.commitment)
    fail(Status::kState, "re-deriving S_{} needs the commitment (set_commitment), which binds S_0", t);
  const hash::Digest want = c == 0 ? m.commitment->initial_state_digest : m.steps[c - 1].state_digest;
  if (file->digest(0) != want)
    fail(Status::kProofMismatch, "checkpoint '{}' does not digest to the state the log records", base);
  TensorMap state = load_state(*file);
  file.reset();
  Program &program = m.prog();
  m.use_dataset(dataset_dir);  // the samples are checked against the dataset root
  std::optional<hash::Digest> run_id;  // the per-step seeds name the run
  if (m.commitment) run_id = m.commitment->run_id();
  else if (m.spec.seed_policy == spec::SeedPolicyKind::kPerStep)
    fail(Status::kState, "re-deriving S_{} needs the commitment (set_commitment): the per-step seeds name the run", t);
  std::vector<double> rates(t - c + 1);
  spec::learning_rates(m.spec.lr_schedule, m.spec.optimizer.lr, c + 1, rates.size(), rates.data());
  for (uint64_t s = c + 1; s <= t; ++s) {
    const commit::ScheduleEntry entry = commit::ScheduleEntry::decode(m.entry(s));
    std::vector<std::unique_ptr<hash::SafetensorsFile>> files;
    for (uint64_t idx : entry.indices())
      files.push_back(hash::SafetensorsFile::from_bytes(m.sample(idx)));
    const Batch batch = split_batch(entry, files);
    StepOptions opts;
    opts.allow_nonfinite_loss = true;
    opts.rates = std::make_pair(rates[s - c - 1], rates[s - c]);
    opts.run_id = run_id;
    StepResult r = replay_step(program, m.spec, s, state, batch, opts);
    if (r.post_digest != m.steps[s - 1].state_digest)
      fail(Status::kProofMismatch,
           "re-deriving S_{} from checkpoint {}: step {} replays to {}, the log records {}", t, c, s,
           r.post_digest.hex(), m.steps[s - 1].state_digest.hex());
    state = std::move(r.post);
    if (replayed) ++*replayed;
  }
  std::error_code ec;
  fs::create_directories(m.dir + "/derived", ec);
  if (ec) fail(Status::kIo, "cannot create '{}/derived': {}", m.dir, ec.message());
  hash::write_safetensors(derived, state_views(state), {});
  return derived;
}

std::vector<statecheck::FlaggedStep> CheckpointStore::run_flags(uint64_t log_size) const {
  const Impl &m = *impl_;
  if (log_size > m.steps.size())
    fail(Status::kOutOfRange, "the flags of a log of {} leaves ({} recorded)", log_size, m.steps.size());
  return statecheck::run_flags(statecheck::decode_tables(m.tables(log_size)));
}

std::pair<Bytes, Bytes> CheckpointStore::leaf(uint64_t t, uint64_t log_size) const {
  const Impl &m = *impl_;
  if (!m.commitment) fail(Status::kState, "the checkpoint directory has no commitment (set_commitment)");
  if (t == 0 || t > log_size || log_size > m.steps.size())
    fail(Status::kOutOfRange, "leaf of step {} against a log of {} leaves ({} recorded)", t, log_size,
         m.steps.size());
  return {m.leaf(m.steps[t - 1]).encode(), merkle::encode_proof(m.log->inclusion_proof(t - 1, log_size))};
}

Bytes CheckpointStore::opening(uint64_t t, uint64_t log_size, const std::string &dataset_dir, bool serve_post) {
  Impl &m = *impl_;
  if (!m.commitment) fail(Status::kState, "the checkpoint directory has no commitment (set_commitment)");
  if (t == 0 || t > log_size || log_size > m.steps.size())
    fail(Status::kOutOfRange, "opening of step {} against a log of {} leaves ({} recorded)", t, log_size,
         m.steps.size());
  commit::OpeningManifest o;
  o.run_id = m.commitment->run_id();
  o.step = t;
  o.log_size = log_size;
  o.pre_state_digest = t == 1 ? m.commitment->initial_state_digest : m.steps[t - 2].state_digest;
  if (t > 1) {
    const StepRecord &p = m.steps[t - 2];
    o.pre_leaf = m.leaf(p).encode();
    o.pre_leaf_proof = merkle::encode_proof(m.log->inclusion_proof(t - 2, log_size));
  }
  const StepRecord &q = m.steps[t - 1];
  o.post_leaf = m.leaf(q).encode();
  o.post_leaf_proof = merkle::encode_proof(m.log->inclusion_proof(t - 1, log_size));
  o.schedule_entry = m.entry(t);
  {
    auto tree = merkle::StoredTree::in_memory();
    for (const Bytes &e : m.schedule) tree->append(e);
    o.schedule_proof = merkle::encode_proof(tree->inclusion_proof(t - 1, m.schedule.size()));
  }
  // The run record (PROTOCOL.md 18, check 32): every leaf, every table,
  // the steps they flag.
  for (uint64_t i = 1; i <= log_size; ++i) {
    const Bytes l = m.leaf(m.steps[i - 1]).encode();
    o.run_leaves.insert(o.run_leaves.end(), l.begin(), l.end());
  }
  o.run_tables = m.tables(log_size);
  o.flagged_steps = commit::flagged_steps(o.run_tables);
  m.use_dataset(dataset_dir);
  m.open_samples(o, commit::ScheduleEntry::decode(o.schedule_entry).indices());
  // References relative to the checkpoint directory: the manifest (and the
  // digest a ledger records) does not depend on where the miner keeps it.
  auto relative = [&](const std::string &path) { return fs::relative(path, m.dir).generic_string(); };
  o.pre_state_ref = relative(state_path(t - 1, dataset_dir));
  if (serve_post) o.post_state_ref = relative(state_path(t, dataset_dir));
  return o.encode();
}

}  // namespace pot::replay
