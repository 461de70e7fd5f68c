// pot hash state|tensor-file: canonical state digests of safetensors files.
#include <CLI/CLI.hpp>

#include "cli_util.h"

namespace pot_cli {

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
}

}  // namespace pot_cli
