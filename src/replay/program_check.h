// The model program is code the miner wrote, run by every verifier
// (docs/security.md section 4). Before any of it runs, the replay checks
// what it can do: the archive may not define __setstate__ (TorchScript runs
// it while loading), and after loading every node of every function and
// method of the program's compilation unit must be an operator of the
// allow-list below. Anything else is refused with kUnsupported naming the
// operator and the function.
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
//   - in namespace aten:: or prim::, and
//   - not one of the side-effecting operators: file and storage I/O
//     (aten::from_file, aten::save, aten::load, any operator with an
//     argument named filename, file, path or f), printing (prim::Print;
//     aten::warn is allowed: torch's own functional code, compiled into
//     every program that uses it, warns on legacy paths), the global RNG's
//     seeding and the thread
//     count (aten::manual_seed, aten::seed, aten::set_num_threads,
//     aten::set_num_interop_threads), asynchronous execution and RPC
//     (prim::fork, aten::wait, prim::rpc_async, prim::rpc_sync,
//     prim::rpc_remote, aten::to_here), Python escapes (prim::PythonOp,
//     prim::IgnoredPythonOp), profiling and timing (prim::TimePoint,
//     prim::AddStatValue, prim::profile*), and changes to module attributes
//     (prim::SetAttr: a program's state is S_t's tensors, nothing else).
// kUnsupported otherwise: "operator aten::from_file in __torch__.Net.forward
// is not allowed in a model program (...)".
void check_program_operators(const torch::jit::Module &module, const std::string &what);

}  // namespace pot::replay
