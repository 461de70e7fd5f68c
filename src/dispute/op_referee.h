// The referee of an operator dispute (docs/PROTOCOL.md 22.3). The operator
// bisection (a StepBisection over node counts, each party claiming the root
// of its first p nodes) ends with the root of the first `index` nodes agreed
// and each party's root of the first index + 1 claimed. Each party then opens
// its node `index`; the referee rules:
//
//   1. An opening that does not prove against its party's claimed root
//      (inclusion of node `index`, consistency from the agreed root), or
//      whose input sources do not hold what it says (an earlier node's
//      result, opened against the agreed root; a tensor of the agreed
//      pre-state, with a state proof; the batch; unwritten memory) loses.
//   2. Same operator, same inputs, different results: the referee runs the
//      one operator on the inputs' bytes under the spec's settings; a party
//      whose results are not what it gives loses. The post-state node is
//      checked without running anything: its digest is the state digest of
//      the tensors it lists.
//   3. Anything else (another operator or arguments, inputs from another
//      source, an input with no source, a random operator, a trace that
//      ends): the referee replays the whole step from the agreed S_{t-1}
//      and compares node `index` with the true one.
//
// With one honest party the agreed nodes are true ones, so the honest node
// `index` passes every rule and the other one fails one. No LibTorch here:
// running an operator or the step is the backend's (replay/referee_backend.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dispute/op_node.h"
#include "merkle/state_proof.h"

namespace pot::dispute {

inline constexpr std::string_view kOpOpeningTag = "pot/v1/op-opening";
inline constexpr size_t kMaxOpeningTensors = 4096;

// A node of the agreed prefix, opened against the agreed root.
struct ProducerOpening {
  Bytes node;
  std::vector<Digest> inclusion;  // node j among the first `index` nodes
};

// One party's opening of node `index` (docs/PROTOCOL.md 22.3).
struct NodeOpening {
  std::optional<Bytes> node;         // nullopt: the party's trace has only `index` nodes
  std::vector<Digest> inclusion;     // node `index` among the first index + 1
  std::vector<Digest> consistency;   // from the first `index` nodes to index + 1 (empty at index 0)
  std::map<uint64_t, ProducerOpening> producers;          // for inputs sourced to earlier nodes
  std::map<std::string, merkle::TensorProof> state;       // for inputs sourced to S_{t-1}
  std::vector<Bytes> tensors;  // every input tensor's bytes, depth-first, row-major

  Bytes encode() const;
  // Strict, bounded decoder: kMalformed, kLimit.
  static NodeOpening decode(ByteView b);
};

struct OperatorDispute {
  uint64_t index = 0;  // the disputed node (0-based)
  Digest agreed_root;  // of the first `index` nodes (the empty root at 0)
  Digest a_root, b_root;  // each party's claim for the first index + 1
  Digest pre_state;       // the agreed S_{t-1}
};

// What the referee needs besides the openings; replay/referee_backend.h has the
// LibTorch one.
class RefereeBackend {
 public:
  virtual ~RefereeBackend() = default;
  // Micro-batch `microbatch`'s forward argument `name` as the replay passes
  // it (nullopt when there is none).
  virtual std::optional<OpTensor> batch_tensor(uint32_t microbatch, const std::string &name) = 0;
  // Why `node` cannot run alone, or nullopt.
  virtual std::optional<std::string> not_executable(const OpNode &node) = 0;
  // Runs the node's operator on `tensors` (one per input tensor); throws
  // kInvalidArgument when they are not the node's.
  virtual std::vector<OpValue> execute(const OpNode &node, const std::vector<Bytes> &tensors) = 0;
  // Replays the step; node `index` of the true trace (nullopt past its end).
  virtual std::optional<Bytes> true_node(uint64_t index) = 0;
};

struct Ruling {
  bool a_loses = false;
  bool b_loses = false;
  std::string rule;    // "opening", "source", "operator", "post_state", "step"
  std::string reason;  // names the party and what was wrong
  bool executed = false;  // rule 2 ran one operator
  bool replayed = false;  // rule 3 replayed the step
};

// kInvalidArgument when a_root == b_root (nothing disputed).
Ruling decide_operator(const OperatorDispute &dispute, const NodeOpening &a, const NodeOpening &b,
                       RefereeBackend &backend);

std::string ruling_json(const Ruling &r);

// What can be checked of one opening without a backend: a ledger's part
// of the referee (docs/ledger.md 2.16). Rules 1 and 2 except batch sources
// (the ledger has no data set), and the post-state node's digest.
struct OpeningCheck {
  bool has_node = false;     // false: "my trace ends"
  std::string failure_rule;  // "" when rules 1 and 2 hold; else "opening" or "source"
  std::string reason;        // why, naming the party
  bool batch_deferred = false;  // a batch source only a referee with the batch can check
  Digest node_key;              // SHA-256 of the node's encoding without its results
  bool post_state = false;      // the node is the post-state node
  bool post_state_holds = false;  // and its digest is the state digest of its tensors
  bool operator==(const OpeningCheck &) const = default;
};

// Party A's (is_a) or B's opening checked against its claim in `dispute`.
OpeningCheck check_opening_alone(const OperatorDispute &dispute, const NodeOpening &opening, bool is_a);

// The ruling the two checks decide alone, as decide_operator would rule,
// or nullopt when a referee with a backend must (rule 3's operator run,
// rule 4's step replay, a batch source). A party whose check failed loses;
// the other party's batch sources are then not checked, so where both lie
// one may go unnamed (with one honest party the ruling is decide_operator's:
// an honest opening never fails a check).
std::optional<Ruling> decide_without_backend(const OpeningCheck &a, const OpeningCheck &b);

}  // namespace pot::dispute
