// How much work a step of the model program does must be a function of the
// program and the shapes the spec fixes, never of the values a served state
// holds: the miner chooses S_{t-1}, and a state that makes every verifier's
// replay run for hours would turn its FAIL into silence (round 3, attack 7;
// docs/security.md section 4). Subnormal values, the arithmetic's slow path,
// are refused by check 28; this is the program's side of the rule.
#pragma once

#include <string>

#include <torch/script.h>

namespace pot::replay {

// Refuses (kUnsupported, naming the operator, the method and the rule) a
// program whose forward or pot_after_step (every call inlined)
//   - runs a loop whose trip count or condition is computed from tensor
//     values (a `while` on a tensor's value, `range(int(x))`);
//   - passes an operator that makes a tensor a size, shape, dimension or
//     count computed from tensor values (`torch.zeros(int(x.sum()))`,
//     `torch.arange(x.max().item())`); or
//   - calls an operator whose output size is a tensor's values, not bounded
//     by its inputs' sizes (aten::bincount, aten::repeat_interleave with a
//     tensor of repeats).
// A value is "computed from tensor values" when it comes from an operator
// that reads a tensor's elements into a number, boolean or list (aten::Int,
// aten::item, aten::tolist, aten::Bool, aten::equal, ...; not the size and
// property reads), or from any operation or branch on such a value. Branches
// on tensor values stay allowed: each branch is bounded.
void check_program_work(const torch::jit::Module &module, const std::string &what);

}  // namespace pot::replay
