// The cross-architecture comparison beyond the norm bucket (docs/PROTOCOL.md
// section 21.5, checks 22 and 29 in the norm-bucket path): a verifier on
// other hardware cannot compare bits, so it compares the work within
// tolerances measured on the determinism matrix (docs/determinism.md,
// bench/tolerance_calibration.py): the committed loss against its replayed
// loss, and the served S_t's update against its replayed update, as a whole
// and per tensor. Without LibTorch: the replay measures, this judges.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hash/update_norm.h"

namespace pot::witness {

// |committed - replayed| / max(|committed|, |replayed|, kLossFloor).
inline constexpr double kLossTolerance = 1e-2;
inline constexpr double kLossFloor = 1e-3;
// UpdateAgreement::relative (the whole update: its size and direction):
// 0.5, or 0.8 when a parameter is F16 or BF16 (UpdateAgreement::
// low_precision). Honest replays on other threads or kernels measured at
// most 1.0e-4 (F32) and 0.384 (BF16, an SGD update of a few units in the
// last place late in a cosine schedule); an update of random signs is
// ~1.41 away, a zero one 1.
inline constexpr double kUpdateTolerance = 0.5;
inline constexpr double kLowPrecisionUpdateTolerance = 0.8;
// UpdateAgreement::worst_relative, over F32 and F64 tensors of at least
// kMinComparedTensorElements elements: at most 4.0e-4 measured.
inline constexpr double kTensorUpdateTolerance = 0.5;
inline constexpr uint64_t kMinComparedTensorElements = 64;

// The relative loss error above (0 for equal losses).
double loss_error(double committed, double replayed);

// A reason naming the step when the committed loss is not the replayed one
// within kLossTolerance, else nullopt.
std::optional<std::string> loss_disagrees(double committed, double replayed, uint64_t step);

// A reason naming the step (and the tensor) when the served update is not
// the replayed one within kUpdateTolerance as a whole or
// kTensorUpdateTolerance for one tensor, else nullopt.
std::optional<std::string> update_disagrees(const hash::UpdateAgreement &a, uint64_t step);

}  // namespace pot::witness
