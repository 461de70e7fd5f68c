// The canonical tensor names of a training state (docs/PROTOCOL.md 21.1):
// one spelling for the replay, the C API (pot_state_part_name) and through
// it every binding that builds states.
#pragma once

#include <string_view>

#include "hash/update_norm.h"

namespace pot::spec {

// The parameters are the tensors a step leaf's update norm covers, so the
// two prefixes are one.
inline constexpr std::string_view kParamPrefix = hash::kLeafNormPrefix;
inline constexpr std::string_view kBufferPrefix = "buffer/";
// "optim/<parameter>/<key>": one optimizer state entry.
inline constexpr std::string_view kOptimPrefix = "optim/";
// The step's gradient, digested as a state of its own (never in S_t).
inline constexpr std::string_view kGradPrefix = "grad/";
// Group 0's rate of the next step; group g's is kLrName + "/" + g.
inline constexpr std::string_view kLrName = "hparam/lr";
inline constexpr std::string_view kRngName = "rng/cpu";

}  // namespace pot::spec
