#include "dispute/op_node.h"

#include <cstring>

#include <fmt/format.h>

#include "common/bytes.h"
#include "common/error.h"
#include "hash/rfc6962.h"
#include "hash/tensor.h"

namespace pot::dispute {

namespace {

void put_string(Bytes &out, std::string_view s) {
  put_u32le(out, static_cast<uint32_t>(s.size()));
  put_str(out, s);
}

void put_value(Bytes &out, const OpValue &v) {
  put_u8(out, static_cast<uint8_t>(v.kind));
  switch (v.kind) {
    case ValueKind::kNone:
    case ValueKind::kGenerator:
      return;
    case ValueKind::kTensor: {
      const OpTensor &t = v.tensor;
      put_u8(out, static_cast<uint8_t>(t.dtype));
      put_u32le(out, static_cast<uint32_t>(t.shape.size()));
      for (uint64_t d : t.shape) put_u64le(out, d);
      for (int64_t s : t.strides) put_u64le(out, static_cast<uint64_t>(s));
      put_bytes(out, t.chunk_root.view());
      put_u8(out, static_cast<uint8_t>(t.source.kind));
      switch (t.source.kind) {
        case SourceKind::kNone:
        case SourceKind::kUninit:
          break;
        case SourceKind::kNode:
          put_u64le(out, t.source.node);
          put_u32le(out, t.source.slot);
          break;
        case SourceKind::kState:
          put_string(out, t.source.name);
          break;
        case SourceKind::kBatch:
          put_u32le(out, t.source.slot);
          put_string(out, t.source.name);
          break;
      }
      return;
    }
    case ValueKind::kInt:
    case ValueKind::kBool:
      if (v.kind == ValueKind::kBool)
        put_u8(out, v.integer ? 1 : 0);
      else
        put_u64le(out, static_cast<uint64_t>(v.integer));
      return;
    case ValueKind::kDouble:
      put_u64le(out, v.bits);
      return;
    case ValueKind::kString:
    case ValueKind::kDevice:
    case ValueKind::kOpaque:
      put_string(out, v.text);
      return;
    case ValueKind::kList:
      put_u32le(out, static_cast<uint32_t>(v.list.size()));
      for (const OpValue &e : v.list) put_value(out, e);
      return;
    case ValueKind::kDigest:
      put_bytes(out, v.digest.view());
      return;
  }
  fail(Status::kInternal, "op node: value kind {}", static_cast<int>(v.kind));
}

class Reader {
 public:
  explicit Reader(ByteView b) : b_(b) {}
  bool done() const { return pos_ == b_.size(); }
  const uint8_t *take(size_t n, const char *what) {
    if (b_.size() - pos_ < n) fail(Status::kMalformed, "op node: truncated in {}", what);
    const uint8_t *p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint8_t u8(const char *what) { return *take(1, what); }
  uint32_t u32(const char *what) { return get_u32le(take(4, what)); }
  uint64_t u64(const char *what) { return get_u64le(take(8, what)); }
  std::string string(const char *what) {
    const uint32_t n = u32(what);
    if (n > kMaxOpStringBytes) fail(Status::kLimit, "op node: {} of {} bytes (at most {})", what, n, kMaxOpStringBytes);
    const uint8_t *p = take(n, what);
    std::string s(reinterpret_cast<const char *>(p), n);
    if (!is_valid_utf8(s)) fail(Status::kMalformed, "op node: {} is not UTF-8", what);
    return s;
  }
  Digest digest(const char *what) {
    Digest d;
    std::memcpy(d.bytes.data(), take(32, what), 32);
    return d;
  }

 private:
  ByteView b_;
  size_t pos_ = 0;
};

OpValue read_value(Reader &r, unsigned depth) {
  if (depth > kMaxOpValueDepth) fail(Status::kLimit, "op node: values nested deeper than {}", kMaxOpValueDepth);
  OpValue v;
  const uint8_t kind = r.u8("a value's kind");
  if (kind > static_cast<uint8_t>(ValueKind::kDigest)) fail(Status::kMalformed, "op node: value kind {}", kind);
  v.kind = static_cast<ValueKind>(kind);
  switch (v.kind) {
    case ValueKind::kNone:
    case ValueKind::kGenerator:
      break;
    case ValueKind::kTensor: {
      OpTensor &t = v.tensor;
      const uint8_t dtype = r.u8("a tensor's dtype");
      if (!hash::dtype_valid(dtype)) fail(Status::kMalformed, "op node: dtype code {}", dtype);
      t.dtype = static_cast<hash::DType>(dtype);
      const uint32_t ndim = r.u32("a tensor's rank");
      if (ndim > hash::kMaxDims) fail(Status::kLimit, "op node: a tensor of rank {} (at most {})", ndim, hash::kMaxDims);
      t.shape.resize(ndim);
      t.strides.resize(ndim);
      for (uint64_t &d : t.shape) d = r.u64("a tensor's shape");
      for (int64_t &s : t.strides) s = static_cast<int64_t>(r.u64("a tensor's strides"));
      t.chunk_root = r.digest("a tensor's chunk root");
      const uint8_t source = r.u8("a tensor's source");
      if (source > static_cast<uint8_t>(SourceKind::kUninit)) fail(Status::kMalformed, "op node: source kind {}", source);
      t.source.kind = static_cast<SourceKind>(source);
      switch (t.source.kind) {
        case SourceKind::kNone:
        case SourceKind::kUninit:
          break;
        case SourceKind::kNode:
          t.source.node = r.u64("a source node");
          t.source.slot = r.u32("a source slot");
          break;
        case SourceKind::kState:
          t.source.name = r.string("a source tensor name");
          break;
        case SourceKind::kBatch:
          t.source.slot = r.u32("a source micro-batch");
          t.source.name = r.string("a source argument name");
          break;
      }
      break;
    }
    case ValueKind::kInt:
      v.integer = static_cast<int64_t>(r.u64("an int"));
      break;
    case ValueKind::kBool: {
      const uint8_t b = r.u8("a bool");
      if (b > 1) fail(Status::kMalformed, "op node: bool byte {}", b);
      v.integer = b;
      break;
    }
    case ValueKind::kDouble:
      v.bits = r.u64("a double");
      break;
    case ValueKind::kString:
    case ValueKind::kDevice:
    case ValueKind::kOpaque:
      v.text = r.string("a string");
      break;
    case ValueKind::kList: {
      const uint32_t n = r.u32("a list's length");
      if (n > kMaxOpListValues) fail(Status::kLimit, "op node: a list of {} values (at most {})", n, kMaxOpListValues);
      for (uint32_t i = 0; i < n; ++i) v.list.push_back(read_value(r, depth + 1));
      break;
    }
    case ValueKind::kDigest:
      v.digest = r.digest("a digest");
      break;
  }
  return v;
}

std::vector<OpValue> read_values(Reader &r, const char *what) {
  const uint32_t n = r.u32(what);
  if (n > kMaxOpListValues) fail(Status::kLimit, "op node: {} {} (at most {})", n, what, kMaxOpListValues);
  std::vector<OpValue> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(read_value(r, 1));
  return out;
}

void collect(const std::vector<OpValue> &values, std::vector<const OpTensor *> &out) {
  for (const OpValue &v : values) {
    if (v.kind == ValueKind::kTensor) out.push_back(&v.tensor);
    if (v.kind == ValueKind::kList) collect(v.list, out);
  }
}

std::string brief(const OpValue &v) {
  switch (v.kind) {
    case ValueKind::kNone: return "None";
    case ValueKind::kTensor: return fmt::format("{}[{}]", hash::dtype_name(v.tensor.dtype), fmt::join(v.tensor.shape, ","));
    case ValueKind::kInt: return std::to_string(v.integer);
    case ValueKind::kDouble: {
      double d;
      std::memcpy(&d, &v.bits, 8);
      return fmt::format("{:.17g}", d);
    }
    case ValueKind::kBool: return v.integer ? "True" : "False";
    case ValueKind::kString: return fmt::format("'{}'", v.text);
    case ValueKind::kList: {
      std::vector<std::string> parts;
      for (const OpValue &e : v.list) parts.push_back(brief(e));
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case ValueKind::kDevice: return v.text;
    case ValueKind::kGenerator: return "Generator";
    case ValueKind::kOpaque: return fmt::format("<{}>", v.text);
    case ValueKind::kDigest: return v.digest.hex().substr(0, 16);
  }
  return "?";
}

}  // namespace

bool OpValue::operator==(const OpValue &o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case ValueKind::kNone:
    case ValueKind::kGenerator: return true;
    case ValueKind::kTensor: return tensor == o.tensor;
    case ValueKind::kInt:
    case ValueKind::kBool: return integer == o.integer;
    case ValueKind::kDouble: return bits == o.bits;
    case ValueKind::kString:
    case ValueKind::kDevice:
    case ValueKind::kOpaque: return text == o.text;
    case ValueKind::kList: return list == o.list;
    case ValueKind::kDigest: return digest == o.digest;
  }
  return false;
}

Bytes encode_op_node(const OpNode &node) {
  // The tag's bytes first, as one insert (GCC 12 misreads a push_back
  // followed by an insert into a fresh vector as out of bounds).
  Bytes out(1 + kOpNodeTag.size());
  out[0] = static_cast<uint8_t>(kOpNodeTag.size());
  std::memcpy(out.data() + 1, kOpNodeTag.data(), kOpNodeTag.size());
  put_string(out, node.name);
  put_string(out, node.overload);
  put_u32le(out, static_cast<uint32_t>(node.inputs.size()));
  for (const OpValue &v : node.inputs) put_value(out, v);
  put_u32le(out, static_cast<uint32_t>(node.outputs.size()));
  for (const OpValue &v : node.outputs) put_value(out, v);
  if (out.size() > kMaxOpNodeBytes)
    fail(Status::kLimit, "op node {}: {} bytes encoded (at most {})", node.name, out.size(), kMaxOpNodeBytes);
  return out;
}

OpNode decode_op_node(ByteView data) {
  if (data.size() > kMaxOpNodeBytes)
    fail(Status::kLimit, "op node: {} bytes (at most {})", data.size(), kMaxOpNodeBytes);
  Reader r(data);
  const uint8_t tag_len = r.u8("the tag");
  const uint8_t *tag = r.take(tag_len, "the tag");
  if (std::string_view(reinterpret_cast<const char *>(tag), tag_len) != kOpNodeTag)
    fail(Status::kMalformed, "op node: the tag is '{}', not '{}'",
         std::string(reinterpret_cast<const char *>(tag), tag_len), kOpNodeTag);
  OpNode node;
  node.name = r.string("the operator name");
  node.overload = r.string("the overload name");
  node.inputs = read_values(r, "inputs");
  node.outputs = read_values(r, "outputs");
  if (!r.done()) fail(Status::kMalformed, "op node: bytes after the outputs");
  return node;
}

Digest op_node_leaf_hash(const OpNode &node) { return hash::leaf_hash(encode_op_node(node)); }

std::vector<const OpTensor *> op_tensors(const std::vector<OpValue> &values) {
  std::vector<const OpTensor *> out;
  collect(values, out);
  return out;
}

std::string describe(const OpNode &node) {
  std::vector<std::string> args;
  for (const OpValue &v : node.inputs) args.push_back(brief(v));
  const std::string name = node.overload.empty() ? node.name : node.name + "." + node.overload;
  return fmt::format("{}({})", name, fmt::join(args, ", "));
}

}  // namespace pot::dispute
