// Shared pieces of the pot CLI: C API error handling, hex input, output.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
class Option;
}

#include "pot.h"

namespace pot_cli {

// Exit statuses: 0 success, 1 a proof or check that did not verify, 2 bad
// usage or input, 3 an I/O or internal failure.
enum Exit { kExitOk = 0, kExitRejected = 1, kExitUsage = 2, kExitFailure = 3 };

// Thrown to stop with a one-line message and an exit status.
struct CliError : std::runtime_error {
  CliError(int code, const std::string &msg) : std::runtime_error(msg), exit_code(code) {}
  int exit_code;
};

// Throws CliError when status is not POT_OK, with the message of *err (which
// the failed call set), and frees it.
void check(pot_status status, pot_error **err, const char *what);
int exit_code_for(pot_status status);

std::string hex(const uint8_t *p, size_t n);
inline std::string hex(const pot_digest &d) { return hex(d.bytes, sizeof d.bytes); }
std::vector<uint8_t> unhex(const std::string &s, const std::string &what);
pot_digest digest_arg(const std::string &s, const std::string &what);
// Lines of a file ('-' = stdin), trimmed of spaces. With keep_empty, an
// empty line is kept (an empty leaf); a final newline ends the last line.
std::vector<std::string> read_lines(const std::string &path, bool keep_empty);
std::vector<uint8_t> read_file(const std::string &path);
// Writes a whole file (CliError kExitFailure on I/O errors).
void write_file(const std::string &path, const std::vector<uint8_t> &bytes);

// Leaves given as hex lines of a file, or as raw files (one leaf each).
struct LeafSource {
  std::vector<std::string> inputs;
  bool raw = false;
  bool hashed = false;  // hex lines are leaf hashes, not leaf data
};
std::vector<pot_digest> leaf_hashes(const LeafSource &src);

using Spec = std::unique_ptr<pot_spec, decltype(&pot_spec_free)>;
using Commitment = std::unique_ptr<pot_commitment, decltype(&pot_commitment_free)>;
// A spec file: JSON, or canonical bytes with binary (or, with detect, when
// the file does not start with '{').
Spec load_spec(const std::string &path, bool binary, bool detect = false);
// A commitment file: JSON or canonical bytes, told apart by the first byte.
Commitment load_commitment(const std::string &path);

// --sealed-flags STEP[,STEP...] | none: the flagged steps the run sealed with
// on the ledger (run_info's flagged_steps).
struct SealedFlags {
  std::vector<std::string> steps;
  CLI::Option *option = nullptr;
};
void add_sealed_flags(CLI::App *c, SealedFlags &f);
// Sets them on the commitment when the option was given
// (pot_commitment_set_sealed_flags).
void apply_sealed_flags(const SealedFlags &f, pot_commitment *c);

// A step to replay, as `pot replay` and `pot dispute` take it.
struct ReplayStep {
  std::string spec, program, pre, entry, run_id;
  std::vector<std::string> samples;
  bool json = false;
};
// Adds --spec --program --pre-state --entry --sample --run-id --json.
void add_step_options(CLI::App *c, ReplayStep &s);

// A loaded replay and the step's inputs for the C calls.
struct LoadedStep {
  Spec spec{nullptr, pot_spec_free};
  std::unique_ptr<pot_replay, decltype(&pot_replay_free)> replay{nullptr, pot_replay_free};
  std::unique_ptr<pot_step_input, decltype(&pot_step_input_free)> input{nullptr, pot_step_input_free};
};
std::unique_ptr<LoadedStep> load_step(const ReplayStep &s);

// Prints {json} with --json, else the plain lines.
void emit(bool as_json, const nlohmann::json &j, const std::vector<std::string> &plain);

}  // namespace pot_cli
