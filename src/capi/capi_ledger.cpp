// C entry points for the reference ledger.
#include "capi/firewall.h"
#include "game/ledger.h"
#include "game/outcome.h"

using namespace pot;
using namespace pot::capi;

struct pot_ledger {
  game::Ledger ledger;
};

extern "C" {

pot_status pot_ledger_new(pot_ledger **out, const char *config_json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    const game::LedgerConfig c = game::LedgerConfig::from_json(parse_json_arg(config_json, "config_json"));
    *out = new pot_ledger{game::Ledger(c)};
  });
}

pot_status pot_ledger_load(pot_ledger **out, const uint8_t *state, size_t state_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    game::Ledger l = game::Ledger::load(bytes_arg(state, state_len, "state"));
    *out = new pot_ledger{std::move(l)};
  });
}

void pot_ledger_free(pot_ledger *ledger) { delete ledger; }

pot_status pot_ledger_save(pot_bytes *out, const pot_ledger *ledger, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(ledger, "ledger")->ledger.save());
  });
}

pot_status pot_ledger_apply(pot_bytes *result, pot_ledger *ledger, const char *call_json, pot_error **err) {
  return guard(err, [&] {
    need(result, "result");
    need(ledger, "ledger");
    const nlohmann::json r = ledger->ledger.apply(parse_json_arg(call_json, "call_json"));
    to_text(result, r.dump());
  });
}

pot_status pot_ledger_outcome_decode(pot_bytes *json, const uint8_t *record, size_t record_len, pot_error **err) {
  return guard(err, [&] {
    need(json, "json");
    const ByteView b = bytes_arg(record, record_len, "record");
    // The log holds both kinds of record, told apart by their tags.
    to_text(json, game::is_dispute_record(b) ? game::DisputeRecord::decode(b).to_json().dump()
                                             : game::Outcome::decode(b).to_json().dump());
  });
}

}  // extern "C"
