#include "dispute/op_trace.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/error.h"
#include "hash/tensor.h"

namespace pot::dispute {

OpTrace::OpTrace(const std::vector<OpNode> &nodes) : tree_(merkle::StoredTree::in_memory()) {
  nodes_.reserve(nodes.size());
  for (const OpNode &n : nodes) {
    nodes_.push_back(encode_op_node(n));
    tree_->append(nodes_.back());
  }
}

Digest OpTrace::root(uint64_t size) const {
  if (size > nodes_.size())
    fail(Status::kOutOfRange, "the trace has {} nodes: no root of its first {}", nodes_.size(), size);
  return tree_->root(size);
}

const Bytes &OpTrace::node(uint64_t index) const {
  if (index >= nodes_.size()) fail(Status::kOutOfRange, "node {}: the trace has {} nodes", index, nodes_.size());
  return nodes_[index];
}

std::vector<Digest> OpTrace::inclusion_proof(uint64_t index, uint64_t size) const {
  return tree_->inclusion_proof(index, size);
}

std::vector<Digest> OpTrace::consistency_proof(uint64_t size1, uint64_t size2) const {
  return tree_->consistency_proof(size1, size2);
}

namespace {

const char *source_kind_name(SourceKind k) {
  switch (k) {
    case SourceKind::kNone: return "none";
    case SourceKind::kNode: return "node";
    case SourceKind::kState: return "state";
    case SourceKind::kBatch: return "batch";
    case SourceKind::kUninit: return "uninit";
  }
  return "?";
}

nlohmann::json value_json(const OpValue &v) {
  using nlohmann::json;
  switch (v.kind) {
    case ValueKind::kNone: return json{{"none", nullptr}};
    case ValueKind::kTensor: {
      const OpTensor &t = v.tensor;
      json src{{"kind", source_kind_name(t.source.kind)}};
      if (t.source.kind == SourceKind::kNode) {
        src["node"] = t.source.node;
        src["slot"] = t.source.slot;
      } else if (t.source.kind == SourceKind::kState) {
        src["name"] = t.source.name;
      } else if (t.source.kind == SourceKind::kBatch) {
        src["microbatch"] = t.source.slot;
        src["name"] = t.source.name;
      }
      return json{{"tensor",
                   {{"dtype", std::string(hash::dtype_name(t.dtype))},
                    {"shape", t.shape},
                    {"strides", t.strides},
                    {"chunk_root", t.chunk_root.hex()},
                    {"source", src}}}};
    }
    case ValueKind::kInt: return json{{"int", v.integer}};
    case ValueKind::kBool: return json{{"bool", v.integer != 0}};
    case ValueKind::kDouble: {
      double d;
      std::memcpy(&d, &v.bits, 8);
      Bytes be(8);
      for (int i = 0; i < 8; ++i) be[static_cast<size_t>(i)] = static_cast<uint8_t>(v.bits >> (8 * (7 - i)));
      // JSON numbers cannot hold NaN or infinities: the bits always come along.
      return json{{"double", std::isfinite(d) ? json(d) : json(nullptr)}, {"bits", to_hex(be)}};
    }
    case ValueKind::kString: return json{{"string", v.text}};
    case ValueKind::kList: {
      json a = json::array();
      for (const OpValue &e : v.list) a.push_back(value_json(e));
      return json{{"list", a}};
    }
    case ValueKind::kDevice: return json{{"device", v.text}};
    case ValueKind::kGenerator: return json{{"generator", nullptr}};
    case ValueKind::kOpaque: return json{{"opaque", v.text}};
    case ValueKind::kDigest: return json{{"digest", v.digest.hex()}};
  }
  return nullptr;
}

using nlohmann::json;

[[noreturn]] void bad(const std::string &path, const std::string &why) {
  fail(Status::kMalformed, "op node JSON: {}: {}", path, why);
}

const json &field(const json &j, const char *key, const std::string &path) {
  if (!j.is_object()) bad(path, "not an object");
  auto it = j.find(key);
  if (it == j.end()) bad(path, fmt::format("no \"{}\"", key));
  return *it;
}

void only(const json &j, std::initializer_list<const char *> keys, const std::string &path) {
  if (!j.is_object()) bad(path, "not an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char *k : keys) known = known || it.key() == k;
    if (!known) bad(path, fmt::format("unknown field \"{}\"", it.key()));
  }
}

std::string text(const json &j, const std::string &path) {
  if (!j.is_string()) bad(path, "not a string");
  const std::string s = j.get<std::string>();
  if (s.size() > kMaxOpStringBytes) fail(Status::kLimit, "op node JSON: {}: {} bytes (at most {})", path, s.size(), kMaxOpStringBytes);
  return s;
}

uint64_t unsigned_of(const json &j, const std::string &path) {
  if (!j.is_number_unsigned()) bad(path, "not an unsigned integer");
  return j.get<uint64_t>();
}

int64_t signed_of(const json &j, const std::string &path) {
  if (!j.is_number_integer()) bad(path, "not an integer");
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad(path, "out of range");
  return j.get<int64_t>();
}

Digest digest_of(const json &j, const std::string &path) {
  try {
    return Digest::from_hex(text(j, path));
  } catch (const Error &) {
    bad(path, "not 64 hex digits");
  }
}

uint32_t u32_of(const json &j, const std::string &path) {
  const uint64_t v = unsigned_of(j, path);
  if (v > UINT32_MAX) bad(path, "over 2^32 - 1");
  return static_cast<uint32_t>(v);
}

// A tensor value's source: {"kind": none|uninit|node|state|batch, ...}.
OpSource source_from_json(const json &src, const std::string &at) {
  const std::string sk = text(field(src, "kind", at), at + ".kind");
  OpSource s;
  if (sk == "none" || sk == "uninit") {
    only(src, {"kind"}, at);
    s.kind = sk == "none" ? SourceKind::kNone : SourceKind::kUninit;
  } else if (sk == "node") {
    only(src, {"kind", "node", "slot"}, at);
    s.kind = SourceKind::kNode;
    s.node = unsigned_of(field(src, "node", at), at + ".node");
    s.slot = u32_of(field(src, "slot", at), at + ".slot");
  } else if (sk == "state") {
    only(src, {"kind", "name"}, at);
    s.kind = SourceKind::kState;
    s.name = text(field(src, "name", at), at + ".name");
  } else if (sk == "batch") {
    only(src, {"kind", "microbatch", "name"}, at);
    s.kind = SourceKind::kBatch;
    s.slot = u32_of(field(src, "microbatch", at), at + ".microbatch");
    s.name = text(field(src, "name", at), at + ".name");
  } else {
    bad(at + ".kind", fmt::format("\"{}\" is not a source kind", sk));
  }
  return s;
}

void tensor_from_json(const json &x, const std::string &at, OpValue &v) {
  v.kind = ValueKind::kTensor;
  only(x, {"dtype", "shape", "strides", "chunk_root", "source"}, at);
  const auto dt = hash::dtype_from_name(text(field(x, "dtype", at), at + ".dtype"));
  if (!dt) bad(at + ".dtype", "not a dtype name");
  v.tensor.dtype = *dt;
  const json &shape = field(x, "shape", at), &strides = field(x, "strides", at);
  if (!shape.is_array() || !strides.is_array() || shape.size() != strides.size())
    bad(at, "shape and strides are arrays of one length");
  if (shape.size() > hash::kMaxDims)
    fail(Status::kLimit, "op node JSON: {}: rank {} (at most {})", at, shape.size(), hash::kMaxDims);
  for (const json &d : shape) v.tensor.shape.push_back(unsigned_of(d, at + ".shape"));
  for (const json &d : strides) v.tensor.strides.push_back(signed_of(d, at + ".strides"));
  v.tensor.chunk_root = digest_of(field(x, "chunk_root", at), at + ".chunk_root");
  v.tensor.source = source_from_json(field(x, "source", at), at + ".source");
}

// {"double": <any>, "bits": "<16 hex digits>"}: the bits are the value.
void double_from_json(const json &j, const std::string &path, OpValue &v) {
  v.kind = ValueKind::kDouble;
  const json &bits = field(j, "bits", path);
  Bytes b;
  try {
    b = from_hex(text(bits, path + ".bits"));
  } catch (const Error &) {
    bad(path + ".bits", "not hex");
  }
  if (b.size() != 8) bad(path + ".bits", "not 16 hex digits");
  for (uint8_t c : b) v.bits = (v.bits << 8) | c;
}

OpValue value_from_json(const json &j, const std::string &path, unsigned depth);

void list_from_json(const json &x, const std::string &at, unsigned depth, OpValue &v) {
  if (!x.is_array()) bad(at, "not an array");
  if (x.size() > kMaxOpListValues)
    fail(Status::kLimit, "op node JSON: {}: {} values (at most {})", at, x.size(), kMaxOpListValues);
  v.kind = ValueKind::kList;
  for (size_t i = 0; i < x.size(); ++i)
    v.list.push_back(value_from_json(x[i], fmt::format("{}[{}]", at, i), depth + 1));
}

void null_from_json(const json &x, const std::string &at) {
  if (!x.is_null()) bad(at, "not null");
}

OpValue value_from_json(const json &j, const std::string &path, unsigned depth) {
  if (depth > kMaxOpValueDepth) fail(Status::kLimit, "op node JSON: {}: nested deeper than {}", path, kMaxOpValueDepth);
  const bool a_double = j.is_object() && j.size() == 2 && j.contains("double") && j.contains("bits");
  if (!(j.is_object() && j.size() == 1) && !a_double) bad(path, "a value is an object with one key naming its kind");
  OpValue v;
  const std::string kind = j.size() == 2 ? "double" : j.begin().key();
  if (kind == "bits") bad(path, "a double's \"bits\" without its \"double\"");
  const json &x = j.at(kind);
  const std::string at = path + "." + kind;
  if (kind == "none") {
    null_from_json(x, at);
  } else if (kind == "tensor") {
    tensor_from_json(x, at, v);
  } else if (kind == "int") {
    v.kind = ValueKind::kInt;
    v.integer = signed_of(x, at);
  } else if (kind == "bool") {
    if (!x.is_boolean()) bad(at, "not a boolean");
    v.kind = ValueKind::kBool;
    v.integer = x.get<bool>() ? 1 : 0;
  } else if (kind == "double") {
    double_from_json(j, path, v);
  } else if (kind == "string" || kind == "device" || kind == "opaque") {
    v.kind = kind == "string" ? ValueKind::kString : kind == "device" ? ValueKind::kDevice : ValueKind::kOpaque;
    v.text = text(x, at);
  } else if (kind == "list") {
    list_from_json(x, at, depth, v);
  } else if (kind == "generator") {
    null_from_json(x, at);
    v.kind = ValueKind::kGenerator;
  } else if (kind == "digest") {
    v.kind = ValueKind::kDigest;
    v.digest = digest_of(x, at);
  } else {
    bad(path, fmt::format("\"{}\" is not a value kind", kind));
  }
  return v;
}

std::vector<OpValue> values_from_json(const json &j, const char *key) {
  const json &a = field(j, key, "node");
  if (!a.is_array()) bad(key, "not an array");
  if (a.size() > kMaxOpListValues) fail(Status::kLimit, "op node JSON: {} values in {} (at most {})", a.size(), key, kMaxOpListValues);
  std::vector<OpValue> out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(value_from_json(a[i], fmt::format("{}[{}]", key, i), 1));
  return out;
}

}  // namespace

OpNode op_node_from_json(const json &j) {
  only(j, {"name", "overload", "inputs", "outputs"}, "node");
  OpNode n;
  n.name = text(field(j, "name", "node"), "name");
  n.overload = text(field(j, "overload", "node"), "overload");
  n.inputs = values_from_json(j, "inputs");
  n.outputs = values_from_json(j, "outputs");
  for (const std::string *s : {&n.name, &n.overload})
    if (!is_valid_utf8(*s)) bad("name", "not UTF-8");
  return n;
}

std::string op_node_json(const OpNode &node) {
  nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
  for (const OpValue &v : node.inputs) in.push_back(value_json(v));
  for (const OpValue &v : node.outputs) out.push_back(value_json(v));
  return nlohmann::json{{"name", node.name}, {"overload", node.overload}, {"inputs", in}, {"outputs", out}}.dump();
}

}  // namespace pot::dispute
