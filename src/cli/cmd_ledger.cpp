// pot ledger: apply a transcript of calls to the reference ledger.
#include <CLI/CLI.hpp>
#include <fstream>

#include "cli_util.h"

namespace pot_cli {

namespace {
using Ledger = std::unique_ptr<pot_ledger, decltype(&pot_ledger_free)>;
}

void add_ledger_commands(CLI::App &app) {
  struct Opts {
    std::string file, state_in, state_out;
    bool json = false, record = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App *ledger = app.add_subcommand("ledger", "Apply ledger calls from a transcript (docs/ledger.md)");
  ledger->add_option("TRANSCRIPT", o->file,
                     "JSON: {\"config\": {...}, \"calls\": [call, ...]}; a call may carry \"expect\"")
      ->required();
  ledger->add_option("--state", o->state_in, "start from a saved state instead of the transcript's config");
  ledger->add_option("--save", o->state_out, "write the final state here");
  ledger->add_flag("--record", o->record, "print the transcript with each call's result as \"expect\"/\"result\"");
  ledger->add_flag("--json", o->json, "print JSON");
  ledger->callback([o] {
    const auto bytes = read_file(o->file);
    nlohmann::json t;
    try {
      t = nlohmann::json::parse(bytes.begin(), bytes.end());
    } catch (const nlohmann::json::exception &e) {
      throw CliError(kExitUsage, o->file + ": not JSON: " + e.what());
    }
    if (!t.is_object() || !t.contains("calls") || !t["calls"].is_array())
      throw CliError(kExitUsage, o->file + ": expected {\"config\": {...}, \"calls\": [...]}");
    pot_error *err = nullptr;
    pot_ledger *l = nullptr;
    if (!o->state_in.empty()) {
      const auto state = read_file(o->state_in);
      check(pot_ledger_load(&l, state.data(), state.size(), &err), &err, o->state_in.c_str());
    } else {
      if (!t.contains("config"))
        throw CliError(kExitUsage, o->file + ": no \"config\" (docs/ledger.md section 1) and no --state");
      check(pot_ledger_new(&l, t["config"].dump().c_str(), &err), &err, "config");
    }
    Ledger guard(l, pot_ledger_free);
    nlohmann::json results = nlohmann::json::array(), recorded = t;
    std::vector<std::string> plain;
    size_t mismatches = 0, n = 0;
    for (auto &call : recorded["calls"]) {
      ++n;
      nlohmann::json c = call;
      const nlohmann::json expect = c.contains("expect") ? c["expect"] : nlohmann::json("ok");
      const nlohmann::json expect_result = c.contains("result") ? c["result"] : nlohmann::json();
      c.erase("expect");
      c.erase("result");
      const std::string name = c.value("call", std::string("?"));
      pot_bytes out{};
      const pot_status s = pot_ledger_apply(&out, l, c.dump().c_str(), &err);
      nlohmann::json r;
      std::string outcome;
      if (s == POT_OK) {
        r = nlohmann::json::parse(std::string(reinterpret_cast<char *>(out.data), out.len));
        pot_bytes_free(&out);
        outcome = "ok";
      } else {
        outcome = pot_status_name(s);
        r = {{"ok", false}, {"status", outcome}, {"message", pot_error_message(err)}};
        pot_error_free(err);
        err = nullptr;
      }
      const bool mismatch = outcome != expect.get<std::string>() || (!expect_result.is_null() && expect_result != r);
      if (mismatch) ++mismatches;
      call["expect"] = outcome;
      call["result"] = r;
      results.push_back({{"call", name}, {"outcome", outcome}, {"result", r}, {"as_expected", !mismatch}});
      plain.push_back(std::to_string(n) + " " + name + ": " + (s == POT_OK ? r.dump() : outcome + ": " + r["message"].get<std::string>()) +
                      (mismatch ? "   [UNEXPECTED, expected " + expect.get<std::string>() + "]" : ""));
    }
    pot_bytes state{};
    check(pot_ledger_save(&state, l, &err), &err, "save");
    pot_digest sd;
    check(pot_sha256(&sd, state.data, state.len, &err), &err, "digest");
    if (!o->state_out.empty()) {
      std::ofstream f(o->state_out, std::ios::binary);
      f.write(reinterpret_cast<const char *>(state.data), static_cast<std::streamsize>(state.len));
      if (!f) {
        pot_bytes_free(&state);
        throw CliError(kExitFailure, "cannot write '" + o->state_out + "'");
      }
    }
    const size_t state_len = state.len;
    pot_bytes_free(&state);
    if (o->record) {
      recorded["state_sha256"] = hex(sd);
      std::cout << recorded.dump(1) << "\n";
    } else {
      plain.push_back("state: " + std::to_string(state_len) + " bytes, sha256 " + hex(sd));
      emit(o->json, {{"results", results}, {"state_bytes", state_len}, {"state_sha256", hex(sd)}}, plain);
    }
    if (mismatches)
      throw CliError(kExitRejected, std::to_string(mismatches) + " call(s) did not go as the transcript expects");
    if (!o->record && t.contains("state_sha256") && t["state_sha256"] != hex(sd))
      throw CliError(kExitRejected, "final state differs from the transcript's state_sha256");
  });
}

}  // namespace pot_cli
