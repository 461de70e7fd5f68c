#include "cli_util.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <fstream>
#include <iostream>
#include <iterator>

namespace pot_cli {

int exit_code_for(pot_status status) {
  switch (status) {
    case POT_E_PROOF_LENGTH:
    case POT_E_PROOF_MISMATCH:
      return kExitRejected;
    case POT_E_INVALID_ARGUMENT:
    case POT_E_MALFORMED:
    case POT_E_LIMIT:
    case POT_E_OUT_OF_RANGE:
    case POT_E_DUPLICATE:
    case POT_E_UNSUPPORTED:
    case POT_E_NOT_FOUND:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

void check(pot_status status, pot_error **err, const char *what) {
  if (status == POT_OK) return;
  std::string msg = std::string(what) + ": " + pot_error_message(*err) + " (" + pot_status_name(status) + ")";
  pot_error_free(*err);
  *err = nullptr;
  throw CliError(exit_code_for(status), msg);
}

std::string hex(const uint8_t *p, size_t n) {
  static const char d[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

std::vector<uint8_t> unhex(const std::string &s, const std::string &what) {
  auto val = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw CliError(kExitUsage, what + ": '" + s + "' is not hex");
  };
  if (s.size() % 2) throw CliError(kExitUsage, what + ": hex '" + s + "' has odd length");
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(val(s[2 * i]) << 4 | val(s[2 * i + 1]));
  return out;
}

pot_digest digest_arg(const std::string &s, const std::string &what) {
  pot_digest d;
  pot_error *err = nullptr;
  check(pot_digest_from_hex(&d, s.c_str(), &err), &err, what.c_str());
  return d;
}

std::vector<uint8_t> read_file(const std::string &path) {
  if (path == "-") {
    std::cin >> std::noskipws;
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(std::cin), {});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError(kExitFailure, "cannot open '" + path + "'");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> read_lines(const std::string &path, bool keep_empty) {
  const std::vector<uint8_t> bytes = read_file(path);
  std::vector<std::string> lines;
  std::string cur;
  auto flush = [&] {
    const auto b = cur.find_first_not_of(" \t\r");
    const auto e = cur.find_last_not_of(" \t\r");
    std::string t = b == std::string::npos ? std::string() : cur.substr(b, e - b + 1);
    if (keep_empty || !t.empty()) lines.push_back(std::move(t));
    cur.clear();
  };
  for (uint8_t c : bytes) {
    if (c == '\n') flush();
    else cur += static_cast<char>(c);
  }
  if (!cur.empty()) flush();  // a last line without a newline
  return lines;
}

std::vector<pot_digest> leaf_hashes(const LeafSource &src) {
  std::vector<pot_digest> out;
  pot_error *err = nullptr;
  auto add_data = [&](const std::vector<uint8_t> &data) {
    pot_digest d;
    check(pot_merkle_leaf_hash(&d, data.data(), data.size(), &err), &err, "leaf hash");
    out.push_back(d);
  };
  if (src.raw) {
    for (const std::string &f : src.inputs) add_data(read_file(f));
    return out;
  }
  if (src.inputs.size() != 1)
    throw CliError(kExitUsage, "give one file of hex lines (or '-'), or --raw with leaf files");
  size_t line = 0;
  for (const std::string &l : read_lines(src.inputs[0], true)) {
    ++line;
    const std::string what = "leaf " + std::to_string(line);
    if (src.hashed) out.push_back(digest_arg(l, what));
    else add_data(unhex(l, what));
  }
  return out;
}

void emit(bool as_json, const nlohmann::json &j, const std::vector<std::string> &plain) {
  if (as_json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (const std::string &l : plain) std::cout << l << "\n";
}

namespace {
bool starts_with_brace(const std::vector<uint8_t> &bytes) {
  const auto first = std::find_if(bytes.begin(), bytes.end(), [](uint8_t b) { return !std::isspace(b); });
  return first != bytes.end() && *first == '{';
}
}  // namespace

Spec load_spec(const std::string &path, bool binary, bool detect) {
  pot_error *err = nullptr;
  pot_spec *s = nullptr;
  const std::vector<uint8_t> bytes = read_file(path);
  if (detect) binary = !starts_with_brace(bytes);
  if (binary) {
    check(pot_spec_decode(&s, bytes.data(), bytes.size(), &err), &err, path.c_str());
  } else {
    const std::string text(bytes.begin(), bytes.end());
    check(pot_spec_from_json(&s, text.c_str(), &err), &err, path.c_str());
  }
  return Spec(s, pot_spec_free);
}

void add_sealed_flags(CLI::App *c, SealedFlags &f) {
  f.option = c->add_option("--sealed-flags", f.steps,
                           "the flagged steps the run sealed with on the ledger (run_info's flagged_steps), "
                           "comma-separated, or none; the manifest must list the same (check 32)")
                 ->delimiter(',');
}

void apply_sealed_flags(const SealedFlags &f, pot_commitment *c) {
  if (!f.option || f.option->count() == 0) return;
  std::vector<uint64_t> steps;
  if (!(f.steps.size() == 1 && f.steps[0] == "none"))
    for (const std::string &s : f.steps) {
      uint64_t v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || end != s.data() + s.size())
        throw CliError(kExitUsage, "--sealed-flags: '" + s + "' is not a step (comma-separated steps, or none)");
      steps.push_back(v);
    }
  pot_error *err = nullptr;
  check(pot_commitment_set_sealed_flags(c, steps.data(), steps.size(), &err), &err, "--sealed-flags");
}

Commitment load_commitment(const std::string &path) {
  pot_error *err = nullptr;
  pot_commitment *c = nullptr;
  const auto bytes = read_file(path);
  if (starts_with_brace(bytes)) {
    const std::string text(bytes.begin(), bytes.end());
    check(pot_commitment_from_json(&c, text.c_str(), &err), &err, path.c_str());
  } else {
    check(pot_commitment_decode(&c, bytes.data(), bytes.size(), &err), &err, path.c_str());
  }
  return Commitment(c, pot_commitment_free);
}

void write_file(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) throw CliError(kExitFailure, path + ": cannot write");
}

void add_step_options(CLI::App *c, ReplayStep &s) {
  c->add_option("--spec", s.spec, "execution spec (JSON or canonical bytes; in a dispute, the task's)")->required();
  c->add_option("--program", s.program, "TorchScript model program")->required();
  c->add_option("--pre-state", s.pre, "S_{t-1} (safetensors; in a dispute, the agreed one)")->required();
  c->add_option("--entry", s.entry, "schedule entry of the step (hex)")->required();
  c->add_option("--sample", s.samples, "sample files (safetensors), in the entry's order")->required();
  c->add_option("--run-id", s.run_id, "the run the step belongs to (hex; required under per_step seeds)");
  c->add_flag("--json", s.json, "print JSON");
}

std::unique_ptr<LoadedStep> load_step(const ReplayStep &s) {
  auto l = std::make_unique<LoadedStep>();
  l->spec = load_spec(s.spec, false, true);
  pot_error *err = nullptr;
  pot_replay *r = nullptr;
  check(pot_replay_new(&r, l->spec.get(), s.program.c_str(), &err), &err, "replay");
  l->replay.reset(r);
  const std::vector<uint8_t> entry = unhex(s.entry, "--entry");
  pot_digest run{};
  if (!s.run_id.empty()) run = digest_arg(s.run_id, "--run-id");
  pot_step_input *in = nullptr;
  check(pot_step_input_new(&in, s.run_id.empty() ? nullptr : &run, s.pre.c_str(), entry.data(), entry.size(), &err),
        &err, "--entry");
  l->input.reset(in);
  for (const std::string &f : s.samples) {
    const std::vector<uint8_t> sample = read_file(f);
    check(pot_step_input_add_sample(in, sample.data(), sample.size(), &err), &err, f.c_str());
  }
  return l;
}

}  // namespace pot_cli
