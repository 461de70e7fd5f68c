// The model program is code the miner wrote, run by every verifier
// (docs/security.md section 4). Before any of it runs, the replay checks
// what it can do: the archive may not define __setstate__ (TorchScript runs
// it while loading), and after loading every node of every function and
// method of the program's compilation unit must pass the allow-list below.
// Anything else is refused with kUnsupported naming the operator and the
// function.
#pragma once

#include <string>

#include <torch/script.h>

namespace pot::replay {

// Before torch::jit::load: refuses (kUnsupported) an archive whose code
// defines __setstate__, which loading would execute; kInvalidArgument for
// bytes that are not a TorchScript archive.
void check_program_archive(const std::string &bytes, const std::string &what);

// After loading: every node (blocks included) of every function the
// module's compilation unit holds and every method of every submodule is
//   - a prim:: operator of TorchScript's structural allow-list (constants,
//     containers, attribute reads, calls, control flow, exceptions, type
//     refinement, tensor property reads); or
//   - an aten:: operator whose schema is pure: arguments and returns are
//     tensors, numbers, strings, tensor properties, generators, None, or
//     containers of those; no argument is named like a file; an operator
//     returning nothing writes one of its own arguments (aten::warn, which
//     torch's functional code calls, excepted); and it is not one of the
//     few that pass that rule with an effect elsewhere (seeding, futures,
//     RPC, storage mapping).
// kUnsupported otherwise: "operator aten::from_file in __torch__.Net.forward
// is not allowed in a model program (...)". docs/security.md section 4.
void check_program_operators(const torch::jit::Module &module, const std::string &what);

// Method `name` of `module` with every call inlined (a copy of its graph),
// or nullptr when the module has no such method.
std::shared_ptr<torch::jit::Graph> inlined_method(const torch::jit::Module &module, const std::string &name);

// The spec's dropout (field 6) is the program's: every torch.nn dropout
// module (Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout) must
// have p == dropout (a traced module keeps no p: its literal is checked as
// the operators'), and so must every dropout operator that the inlined
// forward calls with a literal probability, and the literal dropout_p of any
// other operator (scaled_dot_product_attention). kInvalidArgument naming the
// module or operator otherwise. A probability computed at run time is not
// seen (docs/security.md section 6).
void check_program_dropout(const torch::jit::Module &module, double dropout, const std::string &what);

}  // namespace pot::replay
