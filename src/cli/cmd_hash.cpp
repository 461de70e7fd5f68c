// pot hash state|stats|flags: canonical state digests of safetensors files,
// their statistics tables and the flags of a step (docs/PROTOCOL.md 5.2-5.3).
#include <CLI/CLI.hpp>

#include "cli_util.h"

namespace pot_cli {

namespace {

using Bytes = std::vector<uint8_t>;

Bytes take(pot_bytes &b) {
  Bytes out(b.data, b.data + b.len);
  pot_bytes_free(&b);
  return out;
}

// A state's statistics table: computed from a safetensors file, or read
// from a table file (`pot hash stats --out`) with `table`.
Bytes stats_table(const std::string &path, bool table, uint32_t threads) {
  pot_error *err = nullptr;
  if (table) {
    Bytes b = read_file(path);
    pot_digest d;
    check(pot_state_stats_digest(&d, b.data(), b.size(), &err), &err, path.c_str());
    return b;
  }
  pot_safetensors *f = nullptr;
  check(pot_safetensors_open(&f, path.c_str(), &err), &err, path.c_str());
  std::unique_ptr<pot_safetensors, decltype(&pot_safetensors_free)> guard(f, pot_safetensors_free);
  pot_bytes out{};
  check(pot_safetensors_stats(&out, f, threads, &err), &err, "statistics");
  return take(out);
}

nlohmann::json table_json(const Bytes &table) {
  pot_error *err = nullptr;
  pot_bytes out{};
  check(pot_state_stats_to_json(&out, table.data(), table.size(), &err), &err, "statistics");
  const Bytes text = take(out);
  return nlohmann::json::parse(text.begin(), text.end());
}

std::string number(const nlohmann::json &v) { return v.is_null() ? "inf" : v.dump(); }

void add_stats_commands(CLI::App *hash) {
  struct Opts {
    std::string file, after, out;
    uint32_t threads = 0;
    bool json = false, tables = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App *stats = hash->add_subcommand("stats", "Statistics table of a safetensors state (PROTOCOL 5.2)");
  stats->add_option("FILE", o->file, "safetensors file")->required();
  stats->add_option("--threads", o->threads, "threads (0 = all cores; the table does not depend on it)")
      ->capture_default_str();
  stats->add_option("--out", o->out, "also write the table's canonical bytes to this file");
  stats->add_flag("--json", o->json, "print JSON");
  stats->callback([o] {
    const Bytes table = stats_table(o->file, false, o->threads);
    if (!o->out.empty()) write_file(o->out, table);
    const nlohmann::json j = table_json(table);
    std::vector<std::string> plain = {j["digest"].get<std::string>()};
    for (const auto &t : j["tensors"])
      plain.push_back(t["name"].get<std::string>() + " " + t["dtype"].get<std::string>() + " elements " +
                      t["elements"].dump() + " max_abs " + number(t["max_abs"]) + " l2_norm " +
                      number(t["l2_norm"]) + " nonfinite " + t["nonfinite"].dump() + " subnormal " +
                      t["subnormal"].dump() + " zeros " + t["zeros"].dump());
    emit(o->json, j, plain);
  });
  CLI::App *flags = hash->add_subcommand("flags", "Flags of the step from one state to the next (PROTOCOL 5.3)");
  flags->add_option("BEFORE", o->file, "S_{t-1}: a safetensors file, or a table with --tables")->required();
  flags->add_option("AFTER", o->after, "S_t: the same")->required();
  flags->add_flag("--tables", o->tables, "BEFORE and AFTER are statistics tables (hash stats --out)");
  flags->add_option("--threads", o->threads, "threads for the statistics (0 = all cores)")->capture_default_str();
  flags->add_flag("--json", o->json, "print JSON");
  flags->callback([o] {
    const Bytes before = stats_table(o->file, o->tables, o->threads);
    const Bytes after = stats_table(o->after, o->tables, o->threads);
    pot_error *err = nullptr;
    pot_bytes out{};
    check(pot_state_flags(&out, before.data(), before.size(), after.data(), after.size(), &err), &err, "flags");
    const Bytes text = take(out);
    const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end());
    std::vector<std::string> plain;
    for (const auto &f : j)
      plain.push_back(f["rule"].get<std::string>() + " " + f["tensor"].get<std::string>() + " " +
                      number(f["before"]) + " -> " + number(f["after"]));
    if (plain.empty()) plain.push_back("no flags");
    emit(o->json, {{"flags", j}}, plain);
  });
}

}  // namespace

void add_hash_commands(CLI::App &app) {
  CLI::App *hash = app.add_subcommand("hash", "Canonical digests");
  hash->require_subcommand(1);

  struct Opts {
    std::string file;
    uint32_t threads = 0;
    bool json = false;
    bool tensors = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App *state = hash->add_subcommand("state", "State digest of a safetensors file");
  state->add_option("FILE", o->file, "safetensors file")->required();
  state->add_option("--threads", o->threads, "hashing threads (0 = all cores)")->capture_default_str();
  state->add_flag("--tensors", o->tensors, "also list each tensor's digest");
  state->add_flag("--json", o->json, "print JSON");
  state->callback([o] {
    pot_error *err = nullptr;
    pot_safetensors *f = nullptr;
    check(pot_safetensors_open(&f, o->file.c_str(), &err), &err, o->file.c_str());
    std::unique_ptr<pot_safetensors, decltype(&pot_safetensors_free)> guard(f, pot_safetensors_free);
    pot_digest d;
    check(pot_safetensors_digest(&d, f, o->threads, &err), &err, "digest");
    nlohmann::json j = {{"file", o->file}, {"digest", hex(d)}, {"tensors", pot_safetensors_count(f)}};
    std::vector<std::string> plain = {hex(d)};
    if (o->tensors) {
      j["tensor_digests"] = nlohmann::json::object();
      for (size_t i = 0; i < pot_safetensors_count(f); ++i) {
        const char *name;
        pot_dtype dtype;
        const uint64_t *shape;
        size_t ndim, nbytes;
        const void *data;
        check(pot_safetensors_tensor(&name, &dtype, &shape, &ndim, &data, &nbytes, f, i, &err), &err, "tensor");
        pot_digest td;
        check(pot_tensor_digest(&td, name, dtype, shape, ndim, data, nbytes, o->threads, &err), &err, name);
        j["tensor_digests"][name] = hex(td);
        plain.push_back(hex(td) + "  " + name);
      }
    }
    emit(o->json, j, plain);
  });
  add_stats_commands(hash);
}

}  // namespace pot_cli
