// pot checkpoints info: what a recorder's checkpoint directory holds (run
// id, task, log size and root), read with the core only: no LibTorch, no
// replay (docs/PROTOCOL.md 21.4 lists the files).
#include <CLI/CLI.hpp>
#include <cstring>
#include <filesystem>

#include "cli_util.h"

namespace pot_cli {

namespace {

namespace fs = std::filesystem;

struct Info {
  std::string dir;
  bool json = false;
};

void print_info(const Info &o) {
  pot_error *err = nullptr;
  const fs::path dir(o.dir);
  for (const char *f : {"pot-run.json", "commitment.bin", "log.tree"})
    if (!fs::exists(dir / f))
      throw CliError(kExitUsage, o.dir + ": no " + f + " (not a checkpoint directory, or a recorder that never "
                                                       "set its commitment)");
  // pot-run.json: the format, the spec (hex of its canonical bytes) and k.
  const std::vector<uint8_t> meta_bytes = read_file((dir / "pot-run.json").string());
  const nlohmann::json meta = nlohmann::json::parse(meta_bytes.begin(), meta_bytes.end(), nullptr, false);
  if (!meta.is_object() || !meta.contains("format") || !meta.contains("spec") || !meta["spec"].is_string() ||
      !meta.contains("checkpoint_every"))
    throw CliError(kExitUsage, o.dir + "/pot-run.json: not a checkpoint directory's description");
  const std::vector<uint8_t> spec_bytes = unhex(meta["spec"].get<std::string>(), "pot-run.json spec");
  pot_spec *raw_spec = nullptr;
  check(pot_spec_decode(&raw_spec, spec_bytes.data(), spec_bytes.size(), &err), &err, "pot-run.json spec");
  const Spec spec(raw_spec, pot_spec_free);
  pot_digest spec_digest;
  check(pot_spec_digest(&spec_digest, spec.get(), &err), &err, "spec digest");

  const Commitment c = load_commitment((dir / "commitment.bin").string());
  pot_digest run_id, task_id, committed_spec;
  check(pot_commitment_run_id(&run_id, c.get(), &err), &err, "run id");
  check(pot_commitment_task_id(&task_id, c.get(), &err), &err, "task id");
  check(pot_commitment_digests(nullptr, nullptr, nullptr, &committed_spec, c.get(), &err), &err, "commitment");
  if (std::memcmp(spec_digest.bytes, committed_spec.bytes, POT_DIGEST_SIZE) != 0)
    throw CliError(kExitRejected, o.dir + ": pot-run.json holds spec " + hex(spec_digest) +
                                      ", the commitment names spec " + hex(committed_spec));
  const uint64_t declared = pot_commitment_declared_steps(c.get());

  // log.tree: exists (checked above), so opening it creates nothing.
  pot_tree *raw_tree = nullptr;
  check(pot_tree_open(&raw_tree, (dir / "log.tree").string().c_str(), &err), &err, "log.tree");
  const std::unique_ptr<pot_tree, decltype(&pot_tree_free)> tree(raw_tree, pot_tree_free);
  const uint64_t size = pot_tree_size(tree.get());
  if (size > declared)
    throw CliError(kExitRejected, o.dir + ": the log holds " + std::to_string(size) + " steps, the commitment declares " +
                                      std::to_string(declared));
  pot_digest root;
  check(pot_tree_root(&root, tree.get(), size, &err), &err, "log root");

  uint64_t stored = 0;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir / "checkpoints", ec))
    if (e.path().extension() == ".safetensors") ++stored;

  const nlohmann::json j = {{"dir", o.dir},
                            {"format", meta["format"]},
                            {"run_id", hex(run_id)},
                            {"task_id", hex(task_id)},
                            {"spec_digest", hex(spec_digest)},
                            {"declared_steps", declared},
                            {"recorded_steps", size},
                            {"log_root", hex(root)},
                            {"complete", size == declared},
                            {"checkpoint_every", meta["checkpoint_every"]},
                            {"stored_states", stored}};
  emit(o.json, j,
       {"run id:         " + hex(run_id), "task id:        " + hex(task_id), "spec digest:    " + hex(spec_digest),
        "steps:          " + std::to_string(size) + " of " + std::to_string(declared) +
            (size == declared ? " (complete)" : " (incomplete)"),
        "log root:       " + hex(root) + " (over " + std::to_string(size) + " steps)",
        "stored states:  " + std::to_string(stored) + " (a checkpoint every " + meta["checkpoint_every"].dump() +
            " steps)"});
}

}  // namespace

void add_checkpoint_commands(CLI::App &app) {
  CLI::App *ck = app.get_subcommand("checkpoints");
  auto o = std::make_shared<Info>();
  CLI::App *info = ck->add_subcommand("info", "Run id, task, steps and log root of a checkpoint directory (no replay)");
  info->add_option("DIR", o->dir, "checkpoint directory")->required();
  info->add_flag("--json", o->json, "print JSON");
  info->callback([o] { print_info(*o); });
}

}  // namespace pot_cli
