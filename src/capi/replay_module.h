// The replay module: the C entry points that need LibTorch, built as a
// library of their own (libpot-replay.so.<version>) that libpot loads on the
// first call that replays (docs/building.md "The replay module").
//
// Why: LibTorch takes 0.7-1.6 s to load. A libpot that linked it would make
// every program pay that at start, including `pot --version` and the
// protocol commands of the CLI, and chain clients that never replay. The
// shared libpot therefore holds the core and forwards the calls listed here
// to the module; the static libpot and the module itself hold the
// implementations (capi_replay.cpp) directly.
//
// Both libraries are built from the same sources in the same build, so the
// handles that cross between them (pot_spec, pot_commitment, pot_error,
// pot_bytes, pot_op_trace, pot_safetensors_writer) have one layout; libpot
// refuses a module of another version (it names the file and both
// versions).
#pragma once

#include <cstdint>

#include "pot.h"

// Every function the module provides, in table order.
#define POT_REPLAY_MODULE_FUNCTIONS(X) \
  X(pot_replay_hardware_class)         \
  X(pot_replay_framework_version)      \
  X(pot_replay_new)                    \
  X(pot_replay_free)                   \
  X(pot_replay_input_name)             \
  X(pot_replay_step)                   \
  X(pot_replay_trace)                  \
  X(pot_replay_open_op_node)           \
  X(pot_referee_decide_op)             \
  X(pot_verify_step)                   \
  X(pot_witness_statement)             \
  X(pot_recorder_new)                  \
  X(pot_recorder_resume)               \
  X(pot_recorder_free)                 \
  X(pot_recorder_start)                \
  X(pot_recorder_set_commitment)       \
  X(pot_recorder_begin_step)           \
  X(pot_recorder_end_step)             \
  X(pot_recorder_root)                 \
  X(pot_recorder_consistency_proof)    \
  X(pot_recorder_finish)               \
  X(pot_recorder_size)                 \
  X(pot_checkpoints_open)              \
  X(pot_checkpoints_free)              \
  X(pot_checkpoints_size)              \
  X(pot_checkpoints_state_path)        \
  X(pot_checkpoints_leaf)              \
  X(pot_checkpoints_run_flags)         \
  X(pot_checkpoints_opening)

struct pot_replay_module_table {
  const char *version;  // POT_BUILD_VERSION_STRING of the module's build
  uint32_t abi;         // POT_ABI_VERSION
  uint32_t size;        // sizeof(pot_replay_module_table)
  // Frees an error the module made (libpot copies it into one of its own).
  decltype(&::pot_error_free) error_free;
#define POT_REPLAY_MODULE_MEMBER(f) decltype(&::f) f;
  POT_REPLAY_MODULE_FUNCTIONS(POT_REPLAY_MODULE_MEMBER)
#undef POT_REPLAY_MODULE_MEMBER
};

// The module's one exported symbol.
#define POT_REPLAY_MODULE_ENTRY "pot_replay_module_v1"
extern "C" __attribute__((visibility("default"))) const pot_replay_module_table *pot_replay_module_v1(void);
