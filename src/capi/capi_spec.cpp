// C entry points for the execution spec.
#include "capi/firewall.h"
#include "capi/handles.h"
#include "spec/spec.h"

using namespace pot;
using namespace pot::capi;

static_assert(POT_SEED_PER_STEP == static_cast<int>(spec::SeedPolicyKind::kPerStep));
static_assert(POT_SEED_SINGLE_SEED == static_cast<int>(spec::SeedPolicyKind::kSingleSeed));
static_assert(POT_SEED_NONE == static_cast<int>(spec::SeedPolicyKind::kNone));

namespace pot::capi {

nlohmann::json parse_json_arg(const char *text, const char *param) {
  const std::string_view t = str_arg(text, param);
  // JSON parsing allocates up to ~30 times its input (tests/hostile).
  if (t.size() > POT_MAX_JSON_BYTES)
    fail(Status::kLimit, "{} is {} bytes of JSON, the limit is {} (POT_MAX_JSON_BYTES)", param, t.size(),
         POT_MAX_JSON_BYTES);
  // Every document pot reads nests a few levels (a ledger call holding a
  // commitment holding a spec holding a schedule: 6); refusing deeper input
  // at the first bracket past the bound keeps a hostile `[[[[...` from
  // building half a million nested values before it is refused.
  constexpr int kMaxDepth = 64;
  const nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json &) {
    // nlohmann counts the outermost value as depth 0.
    if (depth >= kMaxDepth) fail(Status::kInvalidArgument, "{} nests deeper than {} levels", param, kMaxDepth);
    return true;
  };
  try {
    return nlohmann::json::parse(t.begin(), t.end(), cb);
  } catch (const nlohmann::json::exception &e) {
    fail(Status::kMalformed, "{} is not valid JSON: {}", param, e.what());
  }
}

void to_text(pot_bytes *out, const std::string &s) {
  Bytes b(s.begin(), s.end());
  b.push_back(0);
  to_bytes(out, b);
  out->len -= 1;  // the NUL is a convenience, not part of the text
}

}  // namespace pot::capi

extern "C" {

pot_status pot_spec_from_json(pot_spec **out, const char *json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto s = spec::ExecutionSpec::from_json(parse_json_arg(json, "json"));
    *out = new pot_spec{std::move(s)};
  });
}

pot_status pot_spec_decode(pot_spec **out, const uint8_t *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto s = spec::ExecutionSpec::decode(bytes_arg(data, data_len, "data"));
    *out = new pot_spec{std::move(s)};
  });
}

void pot_spec_free(pot_spec *spec) { delete spec; }

pot_status pot_spec_encode(pot_bytes *out, const pot_spec *spec, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(spec, "spec")->spec.encode());
  });
}

pot_status pot_spec_to_json(pot_bytes *out, const pot_spec *spec, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_text(out, need(spec, "spec")->spec.to_json().dump());
  });
}

pot_status pot_spec_digest(pot_digest *out, const pot_spec *spec, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(spec, "spec")->spec.digest());
  });
}

pot_status pot_spec_seed_policy(pot_seed_policy *policy, uint64_t *seed, const pot_spec *spec, pot_error **err) {
  return guard(err, [&] {
    const spec::ExecutionSpec &s = need(spec, "spec")->spec;
    if (policy) *policy = static_cast<pot_seed_policy>(s.seed_policy);
    if (seed) *seed = s.seed;
  });
}

uint32_t pot_spec_intra_op_threads(const pot_spec *spec) { return spec ? spec->spec.intra_op_threads : 0; }

uint32_t pot_spec_norm_bucket_resolution(const pot_spec *spec) {
  return spec ? spec->spec.norm_bucket_resolution : 0;
}

pot_status pot_spec_learning_rates(double *out, size_t out_len, const pot_spec *spec, uint64_t first, pot_error **err) {
  return pot_spec_group_learning_rates(out, out_len, spec, 0, first, err);
}

uint32_t pot_spec_group_count(const pot_spec *spec) {
  return spec ? static_cast<uint32_t>(spec->spec.group_count()) : 0;
}

pot_status pot_spec_group_learning_rates(double *out, size_t out_len, const pot_spec *spec, uint32_t group, uint64_t first,
                                         pot_error **err) {
  return guard(err, [&] {
    need(spec, "spec");
    if (out_len > POT_MAX_RATES_PER_CALL)
      fail(Status::kLimit, "{} learning rates asked, at most {} per call (POT_MAX_RATES_PER_CALL)", out_len,
           POT_MAX_RATES_PER_CALL);
    if (out_len > 0) need(out, "out");
    if (group >= spec->spec.group_count())
      fail(Status::kOutOfRange, "parameter group {}: the spec has {} (0..{})", group, spec->spec.group_count(),
           spec->spec.group_count() - 1);
    spec::learning_rates(spec->spec.lr_schedule, spec->spec.group_optimizer(group).lr, first, out_len, out);
  });
}

pot_status pot_program_digest_file(pot_digest *out, const char *path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const hash::Digest d = spec::program_digest_file(std::string(str_arg(path, "path")));
    std::memcpy(out->bytes, d.bytes.data(), d.bytes.size());
  });
}

}  // extern "C"
