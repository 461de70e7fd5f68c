#include "replay/program_check.h"

#include <set>
#include <sstream>
#include <string_view>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>

#include "common/error.h"

namespace pot::replay {

namespace {

// The structural operators of TorchScript (constants, containers, control
// flow, attribute reads, calls, type refinement): the only prim:: operators
// a model program may hold. Anything else under prim:: (Print, fork, RPC,
// SetAttr, profiling, Python escapes, with-statements, object creation) is
// refused by not being here.
const std::set<std::string, std::less<>> &allowed_prim() {
  static const std::set<std::string, std::less<>> names = {
      "prim::Constant",     "prim::ListConstruct",  "prim::ListUnpack",
      "prim::TupleConstruct", "prim::TupleUnpack",  "prim::TupleIndex",
      "prim::TupleSlice",   "prim::DictConstruct",  "prim::DictIndex",
      "prim::GetAttr",      "prim::CallFunction",   "prim::CallMethod",
      "prim::If",           "prim::Loop",           "prim::RaiseException",
      "prim::Uninitialized", "prim::unchecked_cast", "prim::unchecked_unwrap_optional",
      "prim::isinstance",   "prim::NumToTensor",    "prim::device",
      "prim::dtype",        "prim::layout",         "prim::shape",
      "prim::requires_grad", "prim::is_cuda",       "prim::is_cpu",
      "prim::is_sparse",    "prim::is_quantized",   "prim::is_meta",
      "prim::is_mkldnn",    "prim::is_vulkan",      "prim::is_xpu",
      "prim::is_nested",    "prim::is_mps",         "prim::is_ort",
      "prim::is_ipu",       "prim::is_xla",         "prim::is_hpu",
      "prim::data",         "prim::min",            "prim::max",
      "prim::abs",          "prim::name",           "prim::EnumName",
      "prim::EnumValue",    "prim::StringIndex",    "prim::ModuleContainerIndex",
      "prim::TypeCheck",    "prim::ConstantChunk",  "prim::AutogradZero",
      "prim::grad",         "prim::itemsize",       "prim::index",
      "prim::range",        "prim::id",             "prim::type",
  };
  return names;
}

// ATen operators that pass the purity rule below but act outside the
// step's tensors anyway: storage mapping and serialisation, the global
// generator's seed, futures and RPC.
const std::set<std::string, std::less<>> &denied_aten() {
  static const std::set<std::string, std::less<>> names = {
      "aten::from_file", "aten::save",  "aten::load",   "aten::manual_seed", "aten::seed",
      "aten::wait",      "aten::_wait", "aten::_fork",  "aten::to_here",     "aten::set_num_threads",
      "aten::set_num_interop_threads",
  };
  return names;
}

[[noreturn]] void refuse(const std::string &op, const std::string &function, const std::string &what,
                         const std::string &why) {
  fail(Status::kUnsupported,
       "model program '{}': operator {} in {} is not allowed in a model program ({}; docs/security.md section 4)",
       what, op, function, why);
}

// A value an ATen operator may take or give: tensors, numbers, strings, the
// enum-like tensor properties, None, and lists, tuples, optionals and
// dictionaries of those (type variables of the generic list and dict
// operators are bound to such values by the rest of the program). Not:
// storages, streams, futures, RRefs, capsules, objects, Any.
bool pure_type(const c10::TypePtr &t) {
  switch (t->kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::NumberType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::ComplexType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::StringType:
    case c10::TypeKind::NoneType:
    case c10::TypeKind::DeviceObjType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::MemoryFormatType:
    case c10::TypeKind::GeneratorType:
    case c10::TypeKind::VarType:
      return true;
    case c10::TypeKind::OptionalType:
    case c10::TypeKind::ListType:
    case c10::TypeKind::TupleType:
    case c10::TypeKind::DictType:
    case c10::TypeKind::UnionType:
      for (const c10::TypePtr &c : t->containedTypes())
        if (!pure_type(c)) return false;
      return true;
    default:
      return false;
  }
}

// The purity rule for an ATen operator, from its schema: every argument and
// return is a pure_type, none is named like a file, and an operator that
// returns nothing writes one of its own arguments (an in-place tensor or
// list operation); one returning nothing and writing nothing acts only
// outside its values (printing, seeding, thread counts, grad mode).
// Returns why it fails, or nullptr.
const char *impure(const c10::FunctionSchema &schema) {
  bool writes = false;
  for (const c10::Argument &a : schema.arguments()) {
    if (!pure_type(a.type())) return "it takes a value that is not a tensor, number, string or container of those";
    if (a.name() == "filename" || a.name() == "file" || a.name() == "path" || a.name() == "f")
      return "it takes a file name";
    if (a.alias_info() && a.alias_info()->isWrite()) writes = true;
  }
  for (const c10::Argument &r : schema.returns())
    if (!pure_type(r.type())) return "it returns a value that is not a tensor, number, string or container of those";
  if (schema.returns().empty() && !writes && schema.name() != "aten::warn")
    return "it returns nothing and writes none of its arguments: its effect is outside the step's tensors";
  return nullptr;
}

void check_block(const torch::jit::Block *b, const std::string &function, const std::string &what) {
  for (const torch::jit::Node *n : b->nodes()) {
    const c10::Symbol k = n->kind();
    const std::string op = k.toQualString();
    if (k.is_prim()) {
      if (!allowed_prim().count(op))
        refuse(op, function, what, "the prim:: operators allowed are TorchScript's constants, containers, control "
                                   "flow, attribute reads and calls; printing, fork, RPC, attribute writes, "
                                   "profiling, Python and with-statements are not");
    } else if (k.is_aten()) {
      if (denied_aten().count(op))
        refuse(op, function, what, "file, storage, RNG seeding, threading and RPC are side effects");
      const c10::FunctionSchema *schema = n->maybeSchema();
      if (!schema) refuse(op, function, what, "it has no operator schema to check");
      if (const char *why = impure(*schema)) refuse(op, function, what, why);
    } else {
      refuse(op, function, what, "only aten:: and prim:: operators are allowed");
    }
    for (const torch::jit::Block *inner : n->blocks()) check_block(inner, function, what);
  }
}

void check_function(torch::jit::Function &f, const std::string &what) {
  if (!f.isGraphFunction()) refuse(f.qualname().qualifiedName(), f.qualname().qualifiedName(), what,
                                   "only TorchScript functions are allowed");
  check_block(torch::jit::toGraphFunction(f).graph()->block(), f.qualname().qualifiedName(), what);
}

bool dropout_operator(const c10::Symbol k) {
  static const std::set<std::string, std::less<>> names = {
      "aten::dropout",       "aten::dropout_",       "aten::feature_dropout",       "aten::feature_dropout_",
      "aten::alpha_dropout", "aten::alpha_dropout_", "aten::feature_alpha_dropout", "aten::feature_alpha_dropout_",
  };
  return names.count(k.toQualString()) > 0;
}

// torch.nn's dropout modules, by their TorchScript class name (a mangled
// name, __torch__.torch.nn.modules.dropout.___torch_mangle_3.Dropout, when a
// program holds several variants).
bool dropout_module(const torch::jit::Module &m) {
  const auto name = m.type()->name();
  if (!name) return false;
  const std::string q = name->qualifiedName();
  constexpr std::string_view prefix = "__torch__.torch.nn.modules.dropout.";
  if (q.rfind(prefix, 0) != 0) return false;
  const std::string last = name->name();
  return last == "Dropout" || last == "Dropout1d" || last == "Dropout2d" || last == "Dropout3d" ||
         last == "AlphaDropout" || last == "FeatureAlphaDropout";
}

// The dropout probability a node passes, if it takes one: input 1 of the
// dropout operators, the argument named dropout_p of any other operator
// (scaled_dot_product_attention). Returns the input's index, or -1.
int dropout_input(const torch::jit::Node *n) {
  if (dropout_operator(n->kind())) return n->inputs().size() > 1 ? 1 : -1;
  const c10::FunctionSchema *schema = n->kind().is_aten() ? n->maybeSchema() : nullptr;
  if (!schema) return -1;
  const c10::optional<int> i = schema->argumentIndexWithName("dropout_p");
  return i && static_cast<size_t>(*i) < n->inputs().size() ? *i : -1;
}

// Compares every literal dropout probability of a block with the spec's.
void check_dropout_nodes(const torch::jit::Block *b, double dropout, const std::string &what) {
  for (const torch::jit::Node *n : b->nodes()) {
    if (const int i = dropout_input(n); i >= 0) {
      const c10::optional<c10::IValue> p = torch::jit::toIValue(n->input(i));
      if (p && (p->isDouble() || p->isInt()) && p->toScalar().toDouble() != dropout)
        fail(Status::kInvalidArgument,
             "model program '{}': forward calls {} with p = {}, the spec's dropout is {} (docs/PROTOCOL.md 14.2)",
             what, n->kind().toQualString(), p->toScalar().toDouble(), dropout);
    }
    for (const torch::jit::Block *inner : n->blocks()) check_dropout_nodes(inner, dropout, what);
  }
}

}  // namespace

std::shared_ptr<torch::jit::Graph> inlined_method(const torch::jit::Module &module, const std::string &name) {
  const auto method = module.find_method(name);
  if (!method) return nullptr;
  std::shared_ptr<torch::jit::Graph> g = method->graph()->copy();
  torch::jit::Inline(*g);
  return g;
}

void check_program_dropout(const torch::jit::Module &module, double dropout, const std::string &what) {
  for (const torch::jit::NameModule &nm : module.named_modules()) {
    if (!dropout_module(nm.value)) continue;
    // A traced module keeps no p: its probability is a literal of the
    // graph, which the check of forward below compares.
    if (!nm.value.hasattr("p")) continue;
    const c10::IValue p = nm.value.attr("p");
    if (!p.isDouble())
      fail(Status::kInvalidArgument, "model program '{}': dropout module '{}' has a probability p that is not a float",
           what, nm.name);
    if (p.toDouble() != dropout)
      fail(Status::kInvalidArgument,
           "model program '{}': module '{}' ({}) has p = {}, the spec's dropout is {} (docs/PROTOCOL.md 14.2)", what,
           nm.name, nm.value.type()->name()->name(), p.toDouble(), dropout);
  }
  // Dropout with a literal probability, anywhere forward reaches.
  if (const auto g = inlined_method(module, "forward")) check_dropout_nodes(g->block(), dropout, what);
}

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
