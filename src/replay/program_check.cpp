#include "replay/program_check.h"

#include <set>
#include <sstream>
#include <string_view>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/function_impl.h>

#include "common/error.h"

namespace pot::replay {

namespace {

// Operators with effects outside the step's tensors (see the header).
const std::set<std::string, std::less<>> &denied() {
  static const std::set<std::string, std::less<>> names = {
      "aten::from_file",     "aten::save",        "aten::load",
      "aten::manual_seed",   "aten::seed",        "aten::set_num_threads", "aten::set_num_interop_threads",
      "aten::wait",          "aten::to_here",     "aten::_fork",         "aten::_wait",
      "prim::Print",         "prim::PythonOp",    "prim::IgnoredPythonOp", "prim::fork",
      "prim::rpc_async",     "prim::rpc_sync",    "prim::rpc_remote",    "prim::TimePoint",
      "prim::AddStatValue",  "prim::SetAttr",     "prim::awaitable",     "prim::awaitable_wait",
  };
  return names;
}

bool file_argument(const torch::jit::Node *n) {
  const c10::FunctionSchema *schema = n->maybeSchema();
  if (!schema) return false;
  for (const c10::Argument &a : schema->arguments())
    if (a.name() == "filename" || a.name() == "file" || a.name() == "path" || a.name() == "f") return true;
  return false;
}

[[noreturn]] void refuse(const std::string &op, const std::string &function, const std::string &what,
                         const char *why) {
  fail(Status::kUnsupported,
       "model program '{}': operator {} in {} is not allowed in a model program ({}; docs/security.md section 4)",
       what, op, function, why);
}

void check_block(const torch::jit::Block *b, const std::string &function, const std::string &what) {
  for (const torch::jit::Node *n : b->nodes()) {
    const c10::Symbol k = n->kind();
    const std::string op = k.toQualString();
    if (!k.is_aten() && !k.is_prim())
      refuse(op, function, what, "only aten:: and prim:: operators are allowed");
    if (denied().count(op) || std::string_view(op).rfind("prim::profile", 0) == 0)
      refuse(op, function, what, "file, storage, printing, RNG seeding, threading, RPC, Python and attribute "
                                  "changes are side effects");
    if (file_argument(n)) refuse(op, function, what, "it takes a file name");
    for (const torch::jit::Block *inner : n->blocks()) check_block(inner, function, what);
  }
}

void check_function(torch::jit::Function &f, const std::string &what) {
  if (!f.isGraphFunction()) refuse(f.qualname().qualifiedName(), f.qualname().qualifiedName(), what,
                                   "only TorchScript functions are allowed");
  check_block(torch::jit::toGraphFunction(f).graph()->block(), f.qualname().qualifiedName(), what);
}

}  // namespace

void check_program_archive(const std::string &bytes, const std::string &what) {
  std::istringstream stream(bytes);
  std::vector<std::string> records;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(&stream);
    records = reader->getAllRecords();
  } catch (const c10::Error &e) {
    fail(Status::kInvalidArgument, "model program '{}' is not a TorchScript archive: {}", what,
         e.what_without_backtrace());
  }
  for (const std::string &name : records) {
    if (name.rfind("code/", 0) != 0 || name.size() < 3 || name.compare(name.size() - 3, 3, ".py") != 0) continue;
    at::DataPtr data;
    size_t size = 0;
    try {
      std::tie(data, size) = reader->getRecord(name);
    } catch (const c10::Error &e) {
      fail(Status::kInvalidArgument, "model program '{}': record '{}' cannot be read: {}", what, name,
           e.what_without_backtrace());
    }
    const std::string_view code(static_cast<const char *>(data.get()), size);
    if (code.find("def __setstate__") != std::string_view::npos)
      fail(Status::kUnsupported,
           "model program '{}': {} defines __setstate__, which loading the program would run; a model program's "
           "state is S_t's tensors (docs/security.md section 4)",
           what, name);
  }
}

void check_program_operators(const torch::jit::Module &module, const std::string &what) {
  // Methods are normally functions of the compilation unit too: each is walked once.
  std::set<const torch::jit::Function *> seen;
  for (torch::jit::Function *f : module._ivalue()->compilation_unit()->get_functions())
    if (seen.insert(f).second) check_function(*f, what);
  for (const torch::jit::Module &m : module.modules())
    for (const torch::jit::Method &method : m.get_methods())
      if (seen.insert(&method.function()).second) check_function(method.function(), what);
}

}  // namespace pot::replay
