// Operator trace nodes (docs/PROTOCOL.md section 22.2), the leaves a referee
// decodes from a party's opening: a decoded node must re-encode to the
// input, and its JSON must encode back to it. The input is also tried as
// node JSON (pot_op_node_from_json): only pot::Error may come out.
#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "dispute/op_trace.h"
#include "fuzz_common.h"

POT_FUZZ_TARGET({
  // The harness's own parse may fail any way JSON parsing fails (a syntax
  // error, a number out of range: 33333333e33333); only what parses goes to
  // op_node_from_json, from which only pot::Error may come out.
  nlohmann::json text;
  bool parsed = true;
  try {
    text = nlohmann::json::parse(input.begin(), input.end());
  } catch (const nlohmann::json::exception &) {
    parsed = false;
  }
  if (parsed) {
    try {
      const pot::Bytes leaf = pot::dispute::encode_op_node(pot::dispute::op_node_from_json(text));
      if (pot::dispute::encode_op_node(pot::dispute::decode_op_node(leaf)) != leaf) std::abort();
    } catch (const pot::Error &) {
    }
  }
  const pot::dispute::OpNode node = pot::dispute::decode_op_node(input);
  const pot::Bytes again = pot::dispute::encode_op_node(node);
  if (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin())) std::abort();
  const auto j = nlohmann::json::parse(pot::dispute::op_node_json(node));
  if (pot::dispute::encode_op_node(pot::dispute::op_node_from_json(j)) != again) std::abort();
  (void)pot::dispute::describe(node);
})
