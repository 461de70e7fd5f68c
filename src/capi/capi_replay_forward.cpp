// The replay entry points of the shared libpot: each loads the replay module
// (replay_module.h) on first use and forwards to it. Nothing here includes
// LibTorch, so a program that never replays never loads it.
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "capi/firewall.h"
#include "capi/replay_module.h"
#include "capi/version.h"

using namespace pot;
using namespace pot::capi;

namespace {

using Table = pot_replay_module_table;

struct Loaded {
  const Table *table = nullptr;
  std::string error;  // why the module is unavailable (table == nullptr)
};

// The directory of the libpot this code runs in: the module is installed
// beside it (and built beside it).
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&pot_version_string), &info) == 0 || !info.dli_fname)
    return {};
  std::string path(info.dli_fname);
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

Loaded load() {
  Loaded l;
  const std::string dir = own_directory();
  if (dir.empty()) {
    l.error = "cannot tell where libpot was loaded from (dladdr failed), so its replay module cannot be found";
    return l;
  }
  const std::string path = dir + "/libpot-replay.so." POT_BUILD_VERSION_STRING;
  // RTLD_LOCAL: the module's (and LibTorch's) symbols stay out of the
  // global scope, as they were when libpot linked LibTorch itself.
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    l.error = "the replay module could not be loaded (" + std::string(why ? why : path) +
              "); it is built and installed beside libpot with LibTorch";
    return l;
  }
  auto *entry = reinterpret_cast<const Table *(*)()>(dlsym(h, POT_REPLAY_MODULE_ENTRY));
  const Table *t = entry ? entry() : nullptr;
  if (!t) {
    l.error = path + " is not a pot replay module (no " POT_REPLAY_MODULE_ENTRY ")";
  } else if (t->abi != POT_ABI_VERSION || t->size != sizeof(Table) ||
             std::string(t->version) != POT_BUILD_VERSION_STRING) {
    l.error = path + " is the replay module of pot " + t->version + ", this libpot is " POT_BUILD_VERSION_STRING;
  } else {
    l.table = t;
    return l;  // never unloaded: its strings and handles live as long as the process
  }
  dlclose(h);
  return l;
}

const Loaded &loaded() {
  static std::once_flag once;
  static Loaded l;
  std::call_once(once, [] { l = load(); });
  return l;
}

// The module's table, or nullptr with POT_E_UNSUPPORTED in *err.
const Table *module(pot_error **err) {
  const Loaded &l = loaded();
  if (!l.table) set_error(err, POT_E_UNSUPPORTED, l.error.c_str());
  return l.table;
}

// Calls the module's function with the caller's arguments and a pot_error
// of the module's, copied into one of libpot's (each library frees what it
// allocated).
template <typename Fn, typename... Args>
pot_status call(Fn Table::*fn, pot_error **err, Args... args) {
  const Table *m = module(err);
  if (!m) return POT_E_UNSUPPORTED;
  pot_error *merr = nullptr;
  const pot_status s = (m->*fn)(args..., err ? &merr : nullptr);
  if (merr) {
    set_error(err, merr->code, merr->message.c_str());
    m->error_free(merr);
  }
  return s;
}

}  // namespace

extern "C" {

int pot_replay_available(void) { return loaded().table ? 1 : 0; }

pot_status pot_replay_hardware_class(const char **out, pot_error **err) {
  return call(&Table::pot_replay_hardware_class, err, out);
}

pot_status pot_replay_framework_version(const char **out, pot_error **err) {
  return call(&Table::pot_replay_framework_version, err, out);
}

pot_status pot_replay_new(pot_replay **out, const pot_spec *spec, const char *program_path, pot_error **err) {
  return call(&Table::pot_replay_new, err, out, spec, program_path);
}

// A handle exists only if the module made it: the module frees it.
void pot_replay_free(pot_replay *replay) {
  if (replay && loaded().table) loaded().table->pot_replay_free(replay);
}

pot_status pot_replay_input_name(const char **name, const pot_replay *replay, size_t index, pot_error **err) {
  return call(&Table::pot_replay_input_name, err, name, replay, index);
}

pot_status pot_replay_step(pot_replay_result *out, pot_replay *replay, const pot_step_input *input,
                           const char *post_state_path, pot_error **err) {
  return call(&Table::pot_replay_step, err, out, replay, input, post_state_path);
}

pot_status pot_replay_trace(pot_op_trace **out, pot_replay *replay, const pot_step_input *input, pot_error **err) {
  return call(&Table::pot_replay_trace, err, out, replay, input);
}

pot_status pot_replay_open_op_node(pot_bytes *out, pot_replay *replay, const pot_step_input *input, uint64_t index,
                                   pot_error **err) {
  return call(&Table::pot_replay_open_op_node, err, out, replay, input, index);
}

pot_status pot_referee_decide_op(pot_bytes *ruling, pot_replay *replay, const pot_step_input *input,
                                 const pot_digest *pre_state_digest, uint64_t index, const pot_digest *agreed_root,
                                 const pot_digest *a_root, const pot_digest *b_root, const uint8_t *a_opening,
                                 size_t a_opening_len, const uint8_t *b_opening, size_t b_opening_len,
                                 pot_error **err) {
  return call(&Table::pot_referee_decide_op, err, ruling, replay, input, pre_state_digest, index, agreed_root, a_root,
              b_root, a_opening, a_opening_len, b_opening, b_opening_len);
}

pot_status pot_verify_step(pot_verify_result *out, const pot_commitment *commitment, const pot_spec *spec,
                           const char *program_path, uint64_t challenged_step, uint64_t log_size,
                           const pot_digest *log_root, const uint8_t *manifest, size_t manifest_len,
                           const char *pre_state_path, const char *post_state_path, pot_verify_mode mode,
                           uint32_t intra_op_threads, pot_error **err) {
  return call(&Table::pot_verify_step, err, out, commitment, spec, program_path, challenged_step, log_size, log_root,
              manifest, manifest_len, pre_state_path, post_state_path, mode, intra_op_threads);
}

pot_status pot_witness_statement(pot_bytes *out, const pot_verify_result *result, const pot_spec *spec,
                                 const pot_digest *run_id, uint64_t step, uint64_t challenge_id, pot_verify_mode mode,
                                 uint32_t intra_op_threads, pot_error **err) {
  return call(&Table::pot_witness_statement, err, out, result, spec, run_id, step, challenge_id, mode,
              intra_op_threads);
}

pot_status pot_recorder_new(pot_recorder **out, const char *dir, const pot_spec *spec, const char *program_path,
                            uint64_t checkpoint_every, pot_error **err) {
  return call(&Table::pot_recorder_new, err, out, dir, spec, program_path, checkpoint_every);
}

pot_status pot_recorder_resume(pot_recorder **out, uint64_t *step, pot_bytes *state_path, const char *dir,
                               pot_error **err) {
  return call(&Table::pot_recorder_resume, err, out, step, state_path, dir);
}

void pot_recorder_free(pot_recorder *recorder) {
  if (recorder && loaded().table) loaded().table->pot_recorder_free(recorder);
}

pot_status pot_recorder_start(pot_digest *initial_state_digest, pot_recorder *recorder,
                              const pot_safetensors_writer *s0, pot_error **err) {
  return call(&Table::pot_recorder_start, err, initial_state_digest, recorder, s0);
}

pot_status pot_recorder_set_commitment(pot_recorder *recorder, const pot_commitment *commitment,
                                       const uint8_t *const *entries, const size_t *entries_lens, size_t entries_len,
                                       pot_error **err) {
  return call(&Table::pot_recorder_set_commitment, err, recorder, commitment, entries, entries_lens, entries_len);
}

pot_status pot_recorder_begin_step(uint64_t *seed, pot_recorder *recorder, uint64_t step, pot_error **err) {
  return call(&Table::pot_recorder_begin_step, err, seed, recorder, step);
}

pot_status pot_recorder_end_step(pot_digest *state_digest, pot_recorder *recorder,
                                 const pot_safetensors_writer *state, double loss, pot_error **err) {
  return call(&Table::pot_recorder_end_step, err, state_digest, recorder, state, loss);
}

pot_status pot_recorder_root(pot_digest *out, const pot_recorder *recorder, uint64_t size, pot_error **err) {
  return call(&Table::pot_recorder_root, err, out, recorder, size);
}

pot_status pot_recorder_consistency_proof(pot_bytes *out, const pot_recorder *recorder, uint64_t size1,
                                          uint64_t size2, pot_error **err) {
  return call(&Table::pot_recorder_consistency_proof, err, out, recorder, size1, size2);
}

pot_status pot_recorder_finish(pot_digest *root, pot_recorder *recorder, pot_error **err) {
  return call(&Table::pot_recorder_finish, err, root, recorder);
}

// No error to report: a NULL handle (or no module, so no handle) has size 0.
uint64_t pot_recorder_size(const pot_recorder *recorder) {
  return recorder && loaded().table ? loaded().table->pot_recorder_size(recorder) : 0;
}

pot_status pot_checkpoints_open(pot_checkpoints **out, const char *dir, pot_error **err) {
  return call(&Table::pot_checkpoints_open, err, out, dir);
}

void pot_checkpoints_free(pot_checkpoints *checkpoints) {
  if (checkpoints && loaded().table) loaded().table->pot_checkpoints_free(checkpoints);
}

// No error to report: a NULL handle (or no module, so no handle) has size 0.
uint64_t pot_checkpoints_size(const pot_checkpoints *checkpoints) {
  return checkpoints && loaded().table ? loaded().table->pot_checkpoints_size(checkpoints) : 0;
}

pot_status pot_checkpoints_state_path(pot_bytes *out, uint64_t *replayed, pot_checkpoints *checkpoints, uint64_t step,
                                      const char *dataset_dir, pot_error **err) {
  return call(&Table::pot_checkpoints_state_path, err, out, replayed, checkpoints, step, dataset_dir);
}

pot_status pot_checkpoints_leaf(pot_bytes *leaf, pot_bytes *proof, pot_checkpoints *checkpoints, uint64_t step,
                                uint64_t log_size, pot_error **err) {
  return call(&Table::pot_checkpoints_leaf, err, leaf, proof, checkpoints, step, log_size);
}

pot_status pot_checkpoints_run_flags(pot_bytes *out, pot_checkpoints *checkpoints, uint64_t log_size,
                                     pot_error **err) {
  return call(&Table::pot_checkpoints_run_flags, err, out, checkpoints, log_size);
}

pot_status pot_checkpoints_opening(pot_bytes *out, pot_checkpoints *checkpoints, uint64_t step, uint64_t log_size,
                                   const char *dataset_dir, int serve_post_state, pot_error **err) {
  return call(&Table::pot_checkpoints_opening, err, out, checkpoints, step, log_size, dataset_dir,
              serve_post_state);
}

}  // extern "C"
