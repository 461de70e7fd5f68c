// pot: command-line front end of the C API (docs/cli.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli_util.h"

namespace pot_cli {
void add_hash_commands(CLI::App &app);
void add_merkle_commands(CLI::App &app);
void add_protocol_commands(CLI::App &app);
void add_spec_commands(CLI::App &app);
void add_commit_commands(CLI::App &app);
void add_task_commands(CLI::App &app);
void add_open_commands(CLI::App &app);
void add_ledger_commands(CLI::App &app);
void add_replay_commands(CLI::App &app);
void add_checkpoint_commands(CLI::App &app);
void add_report_commands(CLI::App &app);
void add_dispute_commands(CLI::App &app);
}  // namespace pot_cli

int main(int argc, char **argv) {
  CLI::App app{"pot: Proof of Training digests, logs and proofs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pot ") + pot_version_string());
  pot_cli::add_hash_commands(app);
  pot_cli::add_merkle_commands(app);
  pot_cli::add_protocol_commands(app);
  pot_cli::add_spec_commands(app);
  pot_cli::add_commit_commands(app);
  pot_cli::add_task_commands(app);
  pot_cli::add_open_commands(app);  // after protocol: adds to 'witness'
  pot_cli::add_ledger_commands(app);
  pot_cli::add_replay_commands(app);  // after open: adds to 'open'
  pot_cli::add_checkpoint_commands(app);  // after replay: adds to 'checkpoints'
  pot_cli::add_report_commands(app);
  pot_cli::add_dispute_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    std::cerr << "pot: error: " << e.what() << "\n";
    return pot_cli::kExitUsage;
  } catch (const pot_cli::CliError &e) {
    std::cerr << "pot: error: " << e.what() << "\n";
    return e.exit_code;
  } catch (const std::exception &e) {
    std::cerr << "pot: error: " << e.what() << "\n";
    return pot_cli::kExitFailure;
  }
  return pot_cli::kExitOk;
}
