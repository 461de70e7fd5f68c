#include "dispute/op_referee.h"

#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/error.h"
#include "hash/rfc6962.h"
#include "hash/state.h"
#include "hash/tensor.h"
#include "merkle/proof.h"

namespace pot::dispute {

namespace {

void put_hashes(Bytes &out, const std::vector<Digest> &hs) {
  put_u32le(out, static_cast<uint32_t>(hs.size()));
  for (const Digest &h : hs) put_bytes(out, h.view());
}

void put_blob(Bytes &out, ByteView b) {
  put_u64le(out, b.size());
  put_bytes(out, b);
}

class Reader {
 public:
  explicit Reader(ByteView b) : b_(b) {}
  bool done() const { return pos_ == b_.size(); }
  ByteView take(uint64_t n, const char *what) {
    if (b_.size() - pos_ < n) fail(Status::kMalformed, "op opening: truncated in {}", what);
    ByteView v = b_.subspan(pos_, n);
    pos_ += n;
    return v;
  }
  uint8_t u8(const char *what) { return take(1, what)[0]; }
  uint32_t u32(const char *what) { return get_u32le(take(4, what).data()); }
  uint64_t u64(const char *what) { return get_u64le(take(8, what).data()); }
  Bytes blob(const char *what) {
    ByteView v = take(u64(what), what);
    return Bytes(v.begin(), v.end());
  }
  std::vector<Digest> hashes(const char *what) {
    const uint32_t n = u32(what);
    if (n > merkle::kMaxProofHashes) fail(Status::kLimit, "op opening: {} of {} hashes", what, n);
    std::vector<Digest> out;
    for (uint32_t i = 0; i < n; ++i) out.push_back(Digest::from_bytes(take(32, what)));
    return out;
  }

 private:
  ByteView b_;
  size_t pos_ = 0;
};

const char *party(bool a) { return a ? "A" : "B"; }

// The tensor digest a state proof covers, from the node's description of it.
Digest state_tensor_digest(const std::string &name, const OpTensor &t) {
  hash::TensorMeta meta{name, t.dtype, t.shape};
  const uint64_t nbytes = hash::validate_meta(meta);
  return hash::tensor_digest(meta, nbytes, t.chunk_root);
}

struct Checked {
  std::optional<OpNode> node;  // nullopt: the trace ends
  std::optional<std::string> failure;
  std::string rule;
  bool batch_deferred = false;  // a batch source left unchecked (no backend)
};

// Rules 1 and 2 for one party. Without a backend, batch sources are left
// unchecked (batch_deferred).
Checked check_opening(const OperatorDispute &d, const NodeOpening &o, const Digest &root, bool is_a,
                      RefereeBackend *backend) {
  Checked c;
  auto bad = [&](std::string rule, std::string why) {
    c.rule = std::move(rule);
    c.failure = fmt::format("party {}: {}", party(is_a), why);
    return c;
  };
  if (!o.node) {
    // A trace of `index` nodes claims its root at every later point.
    if (root != d.agreed_root)
      return bad("opening", fmt::format("its trace ends at {} nodes, but its claimed root of {} nodes is not the "
                                        "agreed root of {}",
                                        d.index, d.index + 1, d.index));
    return c;
  }
  try {
    merkle::verify_inclusion(d.index, d.index + 1, hash::leaf_hash(*o.node).view(), o.inclusion, root.view());
    if (d.index > 0)
      merkle::verify_consistency(d.index, d.index + 1, d.agreed_root.view(), root.view(), o.consistency);
    else if (d.agreed_root != hash::empty_root())
      return bad("opening", "at node 0 the agreed root must be the empty tree's");
    c.node = decode_op_node(*o.node);
  } catch (const Error &e) {
    return bad("opening", fmt::format("node {} does not open against its claimed root: {}", d.index, e.what()));
  }
  // Every input's source holds what the node says it does.
  const auto inputs = op_tensors(c.node->inputs);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const OpTensor &t = *inputs[k];
    const OpSource &s = t.source;
    try {
      switch (s.kind) {
        case SourceKind::kNone:
          break;
        case SourceKind::kUninit:
          if (t.chunk_root != Digest{}) return bad("source", fmt::format("input tensor {} is unwritten memory with a chunk root", k));
          break;
        case SourceKind::kNode: {
          if (s.node >= d.index)
            return bad("source", fmt::format("input tensor {} names node {}, not an earlier one", k, s.node));
          auto it = o.producers.find(s.node);
          if (it == o.producers.end())
            return bad("source", fmt::format("input tensor {}: node {} is not opened", k, s.node));
          merkle::verify_inclusion(s.node, d.index, hash::leaf_hash(it->second.node).view(), it->second.inclusion,
                                   d.agreed_root.view());
          const OpNode producer = decode_op_node(it->second.node);
          const auto outs = op_tensors(producer.outputs);
          if (s.slot >= outs.size() || !outs[s.slot]->same_content(t))
            return bad("source", fmt::format("input tensor {} is not result {} of node {} ({})", k, s.slot, s.node,
                                             describe(producer)));
          break;
        }
        case SourceKind::kState: {
          auto it = o.state.find(s.name);
          if (it == o.state.end())
            return bad("source", fmt::format("input tensor {}: S_(t-1)'s '{}' has no proof", k, s.name));
          merkle::verify_tensor(d.pre_state, state_tensor_digest(s.name, t), it->second);
          break;
        }
        case SourceKind::kBatch: {
          if (!backend) {
            c.batch_deferred = true;
            break;
          }
          const auto b = backend->batch_tensor(s.slot, s.name);
          if (!b || !b->same_content(t))
            return bad("source", fmt::format("input tensor {} is not argument '{}' of micro-batch {}", k, s.name,
                                             s.slot));
          break;
        }
      }
    } catch (const Error &e) {
      return bad("source", fmt::format("input tensor {} ({} source): {}", k, static_cast<int>(s.kind), e.what()));
    }
  }
  return c;
}

// Rule 2 for the post-state node: its digest is the listed tensors' state digest.
std::optional<Digest> post_state_digest(const OpNode &n) {
  std::map<std::string, Digest> tensors;
  if (n.inputs.size() % 2) return std::nullopt;
  try {
    for (size_t i = 0; i < n.inputs.size(); i += 2) {
      if (n.inputs[i].kind != ValueKind::kString || n.inputs[i + 1].kind != ValueKind::kTensor) return std::nullopt;
      if (!tensors.emplace(n.inputs[i].text, state_tensor_digest(n.inputs[i].text, n.inputs[i + 1].tensor)).second)
        return std::nullopt;
    }
    return hash::state_digest(tensors);
  } catch (const Error &) {
    return std::nullopt;
  }
}

bool post_state_holds(const OpNode &n) {
  const auto d = post_state_digest(n);
  return d && n.outputs.size() == 1 && n.outputs[0].kind == ValueKind::kDigest && n.outputs[0].digest == *d;
}

}  // namespace

Bytes NodeOpening::encode() const {
  Bytes out(1 + kOpOpeningTag.size());  // one write: see encode_op_node
  out[0] = static_cast<uint8_t>(kOpOpeningTag.size());
  std::memcpy(out.data() + 1, kOpOpeningTag.data(), kOpOpeningTag.size());
  put_u8(out, node ? 1 : 0);
  if (node) put_blob(out, *node);
  put_hashes(out, inclusion);
  put_hashes(out, consistency);
  put_u32le(out, static_cast<uint32_t>(producers.size()));
  for (const auto &[j, p] : producers) {
    put_u64le(out, j);
    put_blob(out, p.node);
    put_hashes(out, p.inclusion);
  }
  put_u32le(out, static_cast<uint32_t>(state.size()));
  for (const auto &[name, proof] : state) {
    put_blob(out, ByteView(reinterpret_cast<const uint8_t *>(name.data()), name.size()));
    put_blob(out, proof.encode());
  }
  put_u32le(out, static_cast<uint32_t>(tensors.size()));
  for (const Bytes &t : tensors) put_blob(out, t);
  return out;
}

NodeOpening NodeOpening::decode(ByteView b) {
  Reader r(b);
  const uint8_t tag_len = r.u8("the tag");
  const ByteView tag = r.take(tag_len, "the tag");
  if (std::string_view(reinterpret_cast<const char *>(tag.data()), tag.size()) != kOpOpeningTag)
    fail(Status::kMalformed, "op opening: the tag is not '{}'", kOpOpeningTag);
  NodeOpening o;
  const uint8_t has = r.u8("the node flag");
  if (has > 1) fail(Status::kMalformed, "op opening: node flag {}", has);
  if (has) {
    o.node = r.blob("the node");
    if (o.node->size() > kMaxOpNodeBytes) fail(Status::kLimit, "op opening: a node of {} bytes", o.node->size());
  }
  o.inclusion = r.hashes("the inclusion proof");
  o.consistency = r.hashes("the consistency proof");
  const uint32_t np = r.u32("the producer count");
  if (np > kMaxOpeningTensors) fail(Status::kLimit, "op opening: {} producers (at most {})", np, kMaxOpeningTensors);
  for (uint32_t i = 0; i < np; ++i) {
    const uint64_t j = r.u64("a producer index");
    ProducerOpening p;
    p.node = r.blob("a producer node");
    if (p.node.size() > kMaxOpNodeBytes) fail(Status::kLimit, "op opening: a node of {} bytes", p.node.size());
    p.inclusion = r.hashes("a producer proof");
    if (!o.producers.emplace(j, std::move(p)).second) fail(Status::kMalformed, "op opening: producer {} twice", j);
  }
  const uint32_t ns = r.u32("the state proof count");
  if (ns > kMaxOpeningTensors) fail(Status::kLimit, "op opening: {} state proofs (at most {})", ns, kMaxOpeningTensors);
  for (uint32_t i = 0; i < ns; ++i) {
    const Bytes name = r.blob("a state tensor name");
    const std::string n(name.begin(), name.end());
    hash::validate_name(n);
    if (!o.state.emplace(n, merkle::TensorProof::decode(r.blob("a state proof"))).second)
      fail(Status::kMalformed, "op opening: state proof of '{}' twice", n);
  }
  const uint32_t nt = r.u32("the tensor count");
  if (nt > kMaxOpeningTensors) fail(Status::kLimit, "op opening: {} tensors (at most {})", nt, kMaxOpeningTensors);
  for (uint32_t i = 0; i < nt; ++i) o.tensors.push_back(r.blob("a tensor"));
  if (!r.done()) fail(Status::kMalformed, "op opening: bytes after the tensors");
  return o;
}

Ruling decide_operator(const OperatorDispute &d, const NodeOpening &a, const NodeOpening &b, RefereeBackend &backend) {
  if (d.a_root == d.b_root)
    fail(Status::kInvalidArgument, "both parties claim root {} for {} nodes: nothing is disputed", d.a_root.hex(),
         d.index + 1);
  Ruling r;
  const Checked ca = check_opening(d, a, d.a_root, true, &backend);
  const Checked cb = check_opening(d, b, d.b_root, false, &backend);
  if (ca.failure || cb.failure) {
    r.a_loses = ca.failure.has_value();
    r.b_loses = cb.failure.has_value();
    r.rule = ca.failure ? ca.rule : cb.rule;
    r.reason = ca.failure && cb.failure ? *ca.failure + "; " + *cb.failure : ca.failure ? *ca.failure : *cb.failure;
    return r;
  }
  // Rule 2: one operator on the same inputs.
  if (ca.node && cb.node && ca.node->name == cb.node->name && ca.node->overload == cb.node->overload &&
      ca.node->inputs == cb.node->inputs) {
    const OpNode &n = *ca.node;
    if (n.name == kPostStateOp) {
      r.rule = "post_state";
      r.a_loses = !post_state_holds(*ca.node);
      r.b_loses = !post_state_holds(*cb.node);
      r.reason = fmt::format("the post-state node's digest is the state digest of the tensors it lists: {}",
                             r.a_loses && r.b_loses ? "neither party's is" : r.a_loses ? "A's is not" : "B's is not");
      return r;
    }
    const std::optional<std::string> not_alone = backend.not_executable(n);
    if (!not_alone) {
      std::optional<std::vector<OpValue>> got;
      std::string why;
      for (const NodeOpening *o : {&a, &b}) {
        try {
          got = backend.execute(n, o->tensors);
          break;
        } catch (const Error &e) {
          if (e.status() != Status::kInvalidArgument) throw;
          why += fmt::format("{}party {}'s tensors: {}", why.empty() ? "" : "; ", party(o == &a), e.what());
        }
      }
      if (got) {
        r.rule = "operator";
        r.executed = true;
        r.a_loses = ca.node->outputs != *got;
        r.b_loses = cb.node->outputs != *got;
        r.reason = fmt::format("{} run alone on the agreed inputs gives {}'s results", describe(n),
                               r.a_loses && r.b_loses ? "neither party" : r.a_loses ? "B" : "A");
        return r;
      }
      // Neither party gave the inputs' bytes: the step decides.
      r.reason = fmt::format("no input bytes to run {} on ({}); ", describe(n), why);
    } else {
      r.reason = fmt::format("{}; ", *not_alone);
    }
  }
  // Rule 3: the step, replayed.
  const std::optional<Bytes> truth = backend.true_node(d.index);
  r.rule = "step";
  r.replayed = true;
  r.a_loses = a.node != truth;
  r.b_loses = b.node != truth;
  const std::string what = truth ? describe(decode_op_node(*truth)) : "the trace's end";
  r.reason += fmt::format("node {} of the replayed step is {}: {}", d.index, what,
                          r.a_loses && r.b_loses ? "neither party's" : r.a_loses ? "B's" : "A's");
  return r;
}

OpeningCheck check_opening_alone(const OperatorDispute &d, const NodeOpening &o, bool is_a) {
  const Checked c = check_opening(d, o, is_a ? d.a_root : d.b_root, is_a, nullptr);
  OpeningCheck out;
  out.has_node = o.node.has_value();
  if (c.failure) {
    out.failure_rule = c.rule;
    out.reason = *c.failure;
    return out;
  }
  out.batch_deferred = c.batch_deferred;
  if (c.node) {
    OpNode key = *c.node;
    key.outputs.clear();
    out.node_key = hash::sha256(encode_op_node(key));
    out.post_state = c.node->name == kPostStateOp;
    out.post_state_holds = out.post_state && post_state_holds(*c.node);
  }
  return out;
}

std::optional<Ruling> decide_without_backend(const OpeningCheck &a, const OpeningCheck &b) {
  Ruling r;
  if (!a.failure_rule.empty() || !b.failure_rule.empty()) {
    r.a_loses = !a.failure_rule.empty();
    r.b_loses = !b.failure_rule.empty();
    r.rule = r.a_loses ? a.failure_rule : b.failure_rule;
    r.reason = r.a_loses && r.b_loses ? a.reason + "; " + b.reason : r.a_loses ? a.reason : b.reason;
    return r;
  }
  if (a.has_node && b.has_node && a.post_state && b.post_state && a.node_key == b.node_key && !a.batch_deferred &&
      !b.batch_deferred) {
    r.rule = "post_state";
    r.a_loses = !a.post_state_holds;
    r.b_loses = !b.post_state_holds;
    r.reason = fmt::format("the post-state node's digest is the state digest of the tensors it lists: {}",
                           r.a_loses && r.b_loses ? "neither party's is" : r.a_loses ? "A's is not" : "B's is not");
    return r;
  }
  return std::nullopt;
}

std::string ruling_json(const Ruling &r) {
  return nlohmann::json{{"a_loses", r.a_loses}, {"b_loses", r.b_loses}, {"rule", r.rule},
                        {"reason", r.reason},   {"executed", r.executed}, {"replayed", r.replayed}}
      .dump();
}

}  // namespace pot::dispute
