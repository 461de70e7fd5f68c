// The replay module's entry point (replay_module.h): the table of its
// functions, compiled into libpot-replay only.
#include "capi/replay_module.h"
#include "capi/version.h"

extern "C" const pot_replay_module_table *pot_replay_module_v1(void) {
  static const pot_replay_module_table table = {
      POT_BUILD_VERSION_STRING, POT_BUILD_ABI_VERSION, sizeof(pot_replay_module_table), &::pot_error_free,
#define POT_REPLAY_MODULE_ADDRESS(f) &::f,
      POT_REPLAY_MODULE_FUNCTIONS(POT_REPLAY_MODULE_ADDRESS)
#undef POT_REPLAY_MODULE_ADDRESS
  };
  return &table;
}
