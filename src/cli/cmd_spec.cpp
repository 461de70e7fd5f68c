// pot spec validate | digest | encode | rates.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <vector>

#include "cli_util.h"

namespace pot_cli {

namespace {

pot_digest spec_digest(const Spec &s) {
  pot_error *err = nullptr;
  pot_digest d;
  check(pot_spec_digest(&d, s.get(), &err), &err, "digest");
  return d;
}

}  // namespace

void add_spec_commands(CLI::App &app) {
  CLI::App *spec = app.add_subcommand("spec", "Execution specs: validate, digest, encode, rates, hardware class");
  spec->require_subcommand(1);
  struct Opts {
    std::string file, out;
    bool binary = false, json = false;
  };

  auto v = std::make_shared<Opts>();
  CLI::App *validate = spec->add_subcommand("validate", "Check a spec against every rule");
  validate->add_option("FILE", v->file, "spec (JSON, or canonical bytes with --binary; '-' = stdin)")->required();
  validate->add_flag("--binary", v->binary, "FILE holds canonical bytes");
  validate->add_flag("--json", v->json, "print JSON");
  validate->callback([v] {
    const Spec s = load_spec(v->file, v->binary);
    const pot_digest d = spec_digest(s);
    emit(v->json, {{"valid", true}, {"digest", hex(d)}}, {"OK " + hex(d)});
  });

  auto dg = std::make_shared<Opts>();
  CLI::App *digest = spec->add_subcommand("digest", "Digest of a spec (validates it first)");
  digest->add_option("FILE", dg->file, "spec (JSON, or canonical bytes with --binary)")->required();
  digest->add_flag("--binary", dg->binary, "FILE holds canonical bytes");
  digest->add_flag("--json", dg->json, "print JSON");
  digest->callback([dg] {
    const Spec s = load_spec(dg->file, dg->binary);
    const pot_digest d = spec_digest(s);
    emit(dg->json, {{"digest", hex(d)}}, {hex(d)});
  });

  auto en = std::make_shared<Opts>();
  CLI::App *encode = spec->add_subcommand("encode", "Canonical bytes of a JSON spec");
  encode->add_option("FILE", en->file, "spec (JSON)")->required();
  encode->add_option("--out", en->out, "write the bytes to this file (default: hex on stdout)");
  encode->add_flag("--json", en->json, "print JSON");
  encode->callback([en] {
    const Spec s = load_spec(en->file, false);
    pot_error *err = nullptr;
    pot_bytes b{};
    check(pot_spec_encode(&b, s.get(), &err), &err, "encode");
    const std::string h = hex(b.data, b.len);
    if (!en->out.empty()) {
      std::ofstream out(en->out, std::ios::binary);
      out.write(reinterpret_cast<const char *>(b.data), static_cast<std::streamsize>(b.len));
      if (!out) {
        pot_bytes_free(&b);
        throw CliError(kExitFailure, "cannot write '" + en->out + "'");
      }
    }
    const size_t n = b.len;
    pot_bytes_free(&b);
    emit(en->json, {{"bytes", n}, {"hex", h}}, {en->out.empty() ? h : std::to_string(n) + " bytes written"});
  });

  struct Rates {
    std::string file;
    uint64_t first = 1;
    size_t count = 1;
    bool binary = false, json = false;
  };
  auto ra = std::make_shared<Rates>();
  CLI::App *rates = spec->add_subcommand("rates", "Learning rates the spec's schedule gives steps FIRST..");
  rates->add_option("FILE", ra->file, "spec (JSON, or canonical bytes with --binary)")->required();
  rates->add_option("--first", ra->first, "first step (>= 1)");
  rates->add_option("--count", ra->count, "number of steps (1..2^24)")->check(CLI::Range(size_t{1}, size_t{1} << 24));
  rates->add_flag("--binary", ra->binary, "FILE holds canonical bytes");
  rates->add_flag("--json", ra->json, "print JSON");
  rates->callback([ra] {
    const Spec s = load_spec(ra->file, ra->binary);
    std::vector<double> out(ra->count);
    pot_error *err = nullptr;
    check(pot_spec_learning_rates(out.data(), out.size(), s.get(), ra->first, &err), &err, "rates");
    std::vector<std::string> lines;
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < out.size(); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%llu %.17g", static_cast<unsigned long long>(ra->first + i), out[i]);
      lines.push_back(buf);
      arr.push_back({{"step", ra->first + i}, {"lr", out[i]}});
    }
    emit(ra->json, {{"rates", arr}}, lines);
  });

  auto hw_json = std::make_shared<bool>(false);
  CLI::App *hw = spec->add_subcommand(
      "hardware-class", "This process's hardware class: the spec's hardware_class for steps trained or replayed here");
  hw->add_flag("--json", *hw_json, "print JSON");
  hw->callback([hw_json] {
    const char *cls = nullptr;
    pot_error *err = nullptr;
    check(pot_replay_hardware_class(&cls, &err), &err, "hardware-class");
    emit(*hw_json, {{"hardware_class", cls}}, {cls});
  });
}

}  // namespace pot_cli
