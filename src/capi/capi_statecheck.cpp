// C entry points for state statistics and the rules over consecutive states
// (docs/PROTOCOL.md 5.2-5.3).
#include "capi/firewall.h"
#include "capi/handles.h"
#include "statecheck/state_flags.h"

using namespace pot;
using namespace pot::capi;

extern "C" {

pot_status pot_safetensors_stats(pot_bytes *out, const pot_safetensors *file, uint32_t threads, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, statecheck::state_stats(*need(file, "file")->file, threads).encode());
  });
}

pot_status pot_state_stats_digest(pot_digest *out, const uint8_t *table, size_t table_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, statecheck::StateStats::decode(bytes_arg(table, table_len, "table")).digest());
  });
}

pot_status pot_state_stats_to_json(pot_bytes *out, const uint8_t *table, size_t table_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_text(out, statecheck::StateStats::decode(bytes_arg(table, table_len, "table")).to_json());
  });
}

pot_status pot_state_flags(pot_bytes *out, const uint8_t *before, size_t before_len, const uint8_t *after,
                           size_t after_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const auto b = statecheck::StateStats::decode(bytes_arg(before, before_len, "before"));
    const auto a = statecheck::StateStats::decode(bytes_arg(after, after_len, "after"));
    to_text(out, statecheck::flags_to_json(statecheck::state_flags(b, a)));
  });
}

pot_status pot_run_flags(pot_bytes *out, const uint8_t *const *tables, const size_t *tables_lens, size_t tables_len,
                         pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const auto decoded = statecheck::decode_tables(byte_list_arg(tables, tables_lens, tables_len, "tables"));
    to_text(out, statecheck::run_flags_to_json(statecheck::run_flags(decoded)));
  });
}

}  // extern "C"
