#include "replay/program_work.h"

#include <set>
#include <unordered_set>

#include "common/error.h"
#include "replay/program_check.h"
#include "replay/replay.h"

namespace pot::replay {

namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool is_tensor(const c10::TypePtr &t) { return t->kind() == c10::TypeKind::TensorType; }

// A tensor, or a list, tuple or optional of tensors only: what it holds is
// data anyway, and how many it holds is bounded by the program's structure
// (x.unbind(0) has the shape's length; an append runs as often as its
// loop, whose count is checked).
bool tensors_only(const c10::TypePtr &t) {
  if (is_tensor(t)) return true;
  switch (t->kind()) {
    case c10::TypeKind::ListType:
    case c10::TypeKind::TupleType:
    case c10::TypeKind::OptionalType:
      for (const c10::TypePtr &c : t->containedTypes())
        if (!tensors_only(c)) return false;
      return !t->containedTypes().empty();
    default:
      return false;
  }
}

bool returns_tensor(const Node *n) {
  for (const Value *v : n->outputs()) {
    const c10::TypePtr &t = v->type();
    if (is_tensor(t)) return true;
    for (const c10::TypePtr &c : t->containedTypes())
      if (is_tensor(c)) return true;
  }
  return false;
}

// Operators that read a tensor's size or properties, never its elements:
// what they give is fixed by the spec's shapes and dtypes.
const std::set<std::string, std::less<>> &shape_reads() {
  static const std::set<std::string, std::less<>> names = {
      "aten::size",          "aten::sym_size",     "aten::dim",           "aten::numel",
      "aten::sym_numel",     "aten::len",          "aten::stride",        "aten::sym_stride",
      "aten::is_floating_point", "aten::is_complex", "aten::is_signed",   "aten::is_contiguous",
      "aten::element_size",  "aten::is_same_size", "aten::__is__",        "aten::__isnot__",
      "aten::get_device",    "aten::is_leaf",      "aten::requires_grad", "aten::output_nr",
      "aten::_version",      "aten::is_inference", "aten::is_conj",       "aten::is_neg",
      "aten::storage_offset", "aten::dense_dim",   "aten::sparse_dim",    "aten::has_names",
  };
  return names;
}

// Operators whose output size is their input's values, bounded by no size.
const std::set<std::string, std::less<>> &unbounded_outputs() {
  static const std::set<std::string, std::less<>> names = {"aten::bincount"};
  return names;
}

// Operators whose number arguments are a size (the count of elements made).
const std::set<std::string, std::less<>> &number_sized() {
  static const std::set<std::string, std::less<>> names = {"aten::arange", "aten::range", "aten::linspace",
                                                           "aten::logspace"};
  return names;
}

// An argument type that sizes or shapes what an operator makes: int, SymInt
// and lists or optionals of them.
bool size_type(const c10::TypePtr &t) {
  switch (t->kind()) {
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return true;
    case c10::TypeKind::ListType:
    case c10::TypeKind::OptionalType:
      return size_type(t->containedTypes().at(0));
    default:
      return false;
  }
}

// Walks a graph in order, marking each value computed from tensor elements
// ("data-dependent") and refusing where such a value decides how much work
// is done.
class WorkCheck {
 public:
  WorkCheck(std::string method, std::string what) : method_(std::move(method)), what_(std::move(what)) {}

  void walk(const Block *b) {
    for (const Node *n : b->nodes()) node(n);
  }

 private:
  [[noreturn]] void refuse(const Node *n, const std::string &why) const {
    fail(Status::kUnsupported,
         "model program '{}': {} in {} {}: the work of a step must be fixed by the program and the spec's shapes, "
         "not by the values of a state the miner serves (docs/security.md section 4)",
         what_, n->kind().toQualString(), method_, why);
  }

  bool dependent(const Value *v) const { return dependent_.count(v) > 0; }
  bool mark(const Value *v) {
    if (tensors_only(v->type())) return false;  // tensors' elements are data anyway; their sizes are not
    return dependent_.insert(v).second;
  }

  bool any_dependent_input(const Node *n) const {
    for (const Value *v : n->inputs())
      if (dependent(v)) return true;
    return false;
  }

  void node(const Node *n) {
    const c10::Symbol k = n->kind();
    if (k == c10::prim::Loop) return loop(n);
    if (k == c10::prim::If) return branch(n);
    const std::string op = k.toQualString();
    if (unbounded_outputs().count(op)) refuse(n, "makes a tensor whose size is its input's values");
    const c10::FunctionSchema *schema = k.is_aten() ? n->maybeSchema() : nullptr;
    if (schema) sinks(n, *schema, op);
    if (k.is_aten() && !shape_reads().count(op)) {
      // Reading a tensor's elements into a number, boolean, string or list.
      for (const Value *v : n->inputs())
        if (is_tensor(v->type())) {
          for (const Value *out : n->outputs()) mark(out);
          break;
        }
    }
    if (!any_dependent_input(n)) return;
    for (const Value *out : n->outputs()) mark(out);
    // A container written in place (aten::append) holds what was written.
    if (schema)
      for (size_t i = 0; i < schema->arguments().size() && i < n->inputs().size(); ++i) {
        const auto &alias = schema->arguments()[i].alias_info();
        if (alias && alias->isWrite()) mark(n->input(i));
      }
  }

  void sinks(const Node *n, const c10::FunctionSchema &schema, const std::string &op) {
    if (!returns_tensor(n)) return;
    const bool numbers_size = number_sized().count(op) > 0;
    for (size_t i = 0; i < schema.arguments().size() && i < n->inputs().size(); ++i) {
      if (!dependent(n->input(i))) continue;
      const c10::Argument &a = schema.arguments()[i];
      if (size_type(a.type()) || numbers_size)
        refuse(n, "takes its argument '" + a.name() + "' from tensor values (a size, shape, dimension or count)");
    }
    // repeat_interleave(Tensor repeats): the output's size is the repeats' sum.
    if (op == "aten::repeat_interleave")
      for (size_t i = 0; i < schema.arguments().size(); ++i)
        if (schema.arguments()[i].name() == "repeats" && is_tensor(schema.arguments()[i].type()))
          refuse(n, "takes its repeats from a tensor (the output's size is their sum)");
  }

  void branch(const Node *n) {
    for (const Block *b : n->blocks()) walk(b);
    const bool by_data = dependent(n->input(0));
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      bool out = by_data;
      for (const Block *b : n->blocks()) out = out || dependent(b->outputs()[i]);
      if (out) mark(n->output(i));
    }
  }

  // prim::Loop(max_trip_count, initial_condition, carried...): its body
  // takes (iteration, carried...) and gives (condition, carried...).
  void loop(const Node *n) {
    if (dependent(n->input(0))) refuse(n, "runs a loop whose trip count is computed from tensor values");
    const Block *body = n->blocks()[0];
    const size_t carried = n->outputs().size();
    for (size_t k = 0; k < carried; ++k)
      if (dependent(n->input(2 + k))) mark(body->inputs()[1 + k]);
    // Until what the body carries round stops changing (each pass only adds).
    for (bool changed = true; changed;) {
      walk(body);
      changed = false;
      for (size_t k = 0; k < carried; ++k)
        if (dependent(body->outputs()[1 + k]) && mark(body->inputs()[1 + k])) changed = true;
    }
    if (dependent(n->input(1)) || dependent(body->outputs()[0]))
      refuse(n, "runs a loop whose condition is computed from tensor values");
    for (size_t k = 0; k < carried; ++k)
      if (dependent(body->outputs()[1 + k])) mark(n->output(k));
  }

  std::string method_;
  std::string what_;
  std::unordered_set<const Value *> dependent_;
};

}  // namespace

void check_program_work(const torch::jit::Module &module, const std::string &what) {
  for (const std::string &name : {std::string("forward"), std::string(kAfterStepMethod)})
    if (const auto g = inlined_method(module, name)) WorkCheck(name, what).walk(g->block());
}

}  // namespace pot::replay
