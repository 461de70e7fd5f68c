// pot task build | check | commitment.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli_util.h"

namespace pot_cli {

namespace {

using Task = std::unique_ptr<pot_task, decltype(&pot_task_free)>;

std::string text_of(const std::string &file) {
  const auto bytes = read_file(file);
  return std::string(bytes.begin(), bytes.end());
}

Task load_task(const std::string &file) {
  pot_error *err = nullptr;
  pot_task *t = nullptr;
  check(pot_task_from_json(&t, text_of(file).c_str(), &err), &err, file.c_str());
  return Task(t, pot_task_free);
}

}  // namespace

void add_task_commands(CLI::App &app) {
  CLI::App *task = app.add_subcommand("task", "Tasks: what a task owner fixes before anyone trains");
  task->require_subcommand(1);
  struct Opts {
    std::string file, commitment;
    bool json = false;
  };

  auto b = std::make_shared<Opts>();
  CLI::App *build = task->add_subcommand("build", "Validate a task (JSON); print its task id");
  build->add_option("FILE", b->file, "task (JSON; '-' = stdin)")->required();
  build->add_flag("--json", b->json, "print JSON (adds the canonical bytes)");
  build->callback([b] {
    pot_error *err = nullptr;
    const Task t = load_task(b->file);
    pot_digest id;
    check(pot_task_id(&id, t.get(), &err), &err, "task id");
    pot_bytes enc{};
    check(pot_task_encode(&enc, t.get(), &err), &err, "encode");
    const std::string h = hex(enc.data, enc.len);
    pot_bytes_free(&enc);
    emit(b->json, {{"task_id", hex(id)}, {"canonical", h}}, {hex(id)});
  });

  auto c = std::make_shared<Opts>();
  CLI::App *chk = task->add_subcommand("check", "Does the task admit this training commitment?");
  chk->add_option("TASK", c->file, "task (JSON)")->required();
  chk->add_option("COMMITMENT", c->commitment, "training commitment (JSON or canonical bytes)")->required();
  chk->add_flag("--json", c->json, "print JSON");
  chk->callback([c] {
    pot_error *err = nullptr;
    const Task t = load_task(c->file);
    const Commitment m = load_commitment(c->commitment);
    if (pot_task_check_commitment(t.get(), m.get(), &err) != POT_OK) {
      const std::string msg = pot_error_message(err);
      pot_error_free(err);
      if (c->json) emit(true, {{"admitted", false}, {"reason", msg}}, {});
      throw CliError(kExitRejected, msg);
    }
    pot_digest run;
    check(pot_commitment_run_id(&run, m.get(), &err), &err, "run id");
    emit(c->json, {{"admitted", true}, {"run_id", hex(run)}}, {"OK " + hex(run)});
  });

  struct CommitOpts {
    std::string file, miner;
    uint64_t steps = 0;
  };
  auto m = std::make_shared<CommitOpts>();
  CLI::App *com = task->add_subcommand("commitment", "Print the training commitment (JSON) a miner makes for a task");
  com->add_option("TASK", m->file, "task (JSON)")->required();
  com->add_option("--miner", m->miner, "miner identity (hex)")->required();
  com->add_option("--steps", m->steps, "declared steps")->required();
  com->callback([m] {
    pot_error *err = nullptr;
    const Task t = load_task(m->file);
    const std::vector<uint8_t> miner = unhex(m->miner, "--miner");
    pot_commitment *raw = nullptr;
    check(pot_task_commitment(&raw, t.get(), miner.data(), miner.size(), m->steps, &err), &err, "commitment");
    const Commitment made(raw, pot_commitment_free);
    pot_bytes j{};
    check(pot_commitment_to_json(&j, made.get(), &err), &err, "commitment JSON");
    const std::string text(reinterpret_cast<const char *>(j.data), j.len);
    pot_bytes_free(&j);
    std::printf("%s\n", text.c_str());
  });
}

}  // namespace pot_cli
