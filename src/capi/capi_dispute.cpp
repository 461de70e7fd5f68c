// C entry points for refereed disputes: the step bisection and operator traces.
#include <algorithm>
#include <vector>

#include "capi/firewall.h"
#include "capi/handles.h"
#include "dispute/bisection.h"
#include "dispute/op_trace.h"
#include "merkle/proof.h"

using namespace pot;
using namespace pot::capi;

struct pot_bisection {
  dispute::StepBisection bisection;
};

static_assert(POT_BISECTION_MIN_ARITY == dispute::kMinArity && POT_BISECTION_MAX_ARITY == dispute::kMaxArity &&
                  POT_BISECTION_MAX_POINTS == dispute::kMaxArity - 1,
              "pot.h documents the arity bounds");

extern "C" {

pot_status pot_bisection_points(uint64_t *points, size_t *points_len, uint64_t lo, uint64_t hi, uint32_t arity,
                                pot_error **err) {
  return guard(err, [&] {
    need(points_len, "points_len");
    const std::vector<uint64_t> p = dispute::bisection_points(lo, hi, arity);
    const size_t capacity = *points_len;
    *points_len = p.size();
    if (!points) return;
    if (capacity < p.size())
      fail(Status::kInvalidArgument, "pot_bisection_points: {} points do not fit a capacity of {}", p.size(),
           capacity);
    std::copy(p.begin(), p.end(), points);
  });
}

pot_status pot_bisection_rounds(uint32_t *rounds, uint64_t lo, uint64_t hi, uint32_t arity, pot_error **err) {
  return guard(err, [&] { *need(rounds, "rounds") = dispute::bisection_rounds(lo, hi, arity); });
}

pot_status pot_bisection_new(pot_bisection **out, uint64_t lo, uint64_t hi, uint32_t arity, const pot_digest *agreed,
                             const pot_digest *a_hi, const pot_digest *b_hi, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    dispute::StepBisection b(lo, hi, arity, to_digest(agreed, "agreed"), to_digest(a_hi, "a_hi"),
                             to_digest(b_hi, "b_hi"));
    *out = new pot_bisection{b};
  });
}

void pot_bisection_free(pot_bisection *bisection) { delete bisection; }

pot_status pot_bisection_info_get(pot_bisection_info *out, const pot_bisection *bisection, pot_error **err) {
  return guard(err, [&] {
    result_arg(out, "out", "pot_bisection_info", "POT_BISECTION_INFO_INIT");
    const dispute::StepBisection &b = need(bisection, "bisection")->bisection;
    pot_bisection_info info{};
    info.lo = b.lo();
    info.hi = b.hi();
    info.arity = b.arity();
    info.rounds_played = b.rounds_played();
    info.done = b.done() ? 1 : 0;
    from_digest(&info.agreed, b.agreed());
    from_digest(&info.a_hi, b.a_hi());
    from_digest(&info.b_hi, b.b_hi());
    write_result(out, info);
  });
}

pot_status pot_bisection_play_round(pot_bisection *bisection, const pot_digest *a_claims, const pot_digest *b_claims,
                                    size_t claims_len, pot_error **err) {
  return guard(err, [&] {
    dispute::StepBisection &b = need(bisection, "bisection")->bisection;
    if (b.done()) fail(Status::kState, "pot_bisection_play_round: done at step {}", b.hi());
    if (claims_len > dispute::kMaxArity - 1)
      fail(Status::kInvalidArgument, "pot_bisection_play_round: {} claims, a round has at most {}", claims_len,
           dispute::kMaxArity - 1);
    if (claims_len > 0) {
      need(a_claims, "a_claims");
      need(b_claims, "b_claims");
    }
    std::vector<hash::Digest> a(claims_len), c(claims_len);
    for (size_t i = 0; i < claims_len; ++i) {
      a[i] = to_digest(&a_claims[i], "a_claims");
      c[i] = to_digest(&b_claims[i], "b_claims");
    }
    b.play_round(a, c);
  });
}

}  // extern "C"

void pot_op_trace_free(pot_op_trace *trace) { delete trace; }

pot_status pot_op_trace_replay_result(pot_replay_result *out, const pot_op_trace *trace, pot_error **err) {
  return guard(err, [&] {
    result_arg(out, "out", "pot_replay_result", "POT_REPLAY_RESULT_INIT");
    write_result(out, need(trace, "trace")->result);
  });
}

pot_status pot_op_trace_size(uint64_t *out, const pot_op_trace *trace, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = need(trace, "trace")->trace->size();
  });
}

pot_status pot_op_trace_root(pot_digest *out, const pot_op_trace *trace, uint64_t size, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(trace, "trace")->trace->root(size));
  });
}

pot_status pot_op_trace_node(pot_bytes *out, const pot_op_trace *trace, uint64_t index, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(trace, "trace")->trace->node(index));
  });
}

pot_status pot_op_trace_inclusion_proof(pot_bytes *out, const pot_op_trace *trace, uint64_t index, uint64_t size,
                                        pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, merkle::encode_proof(need(trace, "trace")->trace->inclusion_proof(index, size)));
  });
}

pot_status pot_op_trace_consistency_proof(pot_bytes *out, const pot_op_trace *trace, uint64_t size1, uint64_t size2,
                                          pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, merkle::encode_proof(need(trace, "trace")->trace->consistency_proof(size1, size2)));
  });
}

pot_status pot_op_node_json(pot_bytes *out, const uint8_t *node, size_t node_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const std::string j = dispute::op_node_json(dispute::decode_op_node(bytes_arg(node, node_len, "node")));
    to_bytes(out, Bytes(j.begin(), j.end()));
  });
}

pot_status pot_op_node_from_json(pot_bytes *out, const char *json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, dispute::encode_op_node(dispute::op_node_from_json(parse_json_arg(json, "json"))));
  });
}
