// pot open verify and pot witness commit|reveal|verdict.
#include <CLI/CLI.hpp>

#include "cli_util.h"

namespace pot_cli {

namespace {

void add_open_verify(CLI::App *open) {
  struct Verify {
    std::string commitment, root, manifest, pre, post;
    uint64_t size = 0, step = 0;
    uint32_t threads = 0;
    bool json = false;
    SealedFlags sealed;
  };
  auto vo = std::make_shared<Verify>();
  CLI::App *verify = open->add_subcommand("verify", "Check an opening (everything but the replay)");
  verify->add_option("MANIFEST", vo->manifest, "manifest file (canonical bytes)")->required();
  verify->add_option("--step", vo->step, "the challenged step the manifest must open")->required();
  verify->add_option("--commitment", vo->commitment, "training commitment (JSON or canonical bytes)")->required();
  verify->add_option("--root", vo->root, "posted log root (hex)")->required();
  verify->add_option("--size", vo->size, "leaves under the posted root")->required();
  verify->add_option("--pre-state", vo->pre, "served pre-state file (safetensors)");
  verify->add_option("--post-state", vo->post, "served post-state file (cross-architecture path)");
  verify->add_option("--threads", vo->threads, "hashing threads (0 = all cores)");
  verify->add_flag("--json", vo->json, "print JSON");
  add_sealed_flags(verify, vo->sealed);
  verify->callback([vo] {
    const Commitment c = load_commitment(vo->commitment);
    apply_sealed_flags(vo->sealed, c.get());
    const pot_digest root = digest_arg(vo->root, "--root");
    const auto manifest = read_file(vo->manifest);
    pot_error *err = nullptr;
    pot_opening_check chk = POT_CHECK_OK;
    const pot_status s = pot_opening_verify(&chk, c.get(), vo->step, vo->size, &root, manifest.data(), manifest.size(),
                                            vo->pre.empty() ? nullptr : vo->pre.c_str(),
                                            vo->post.empty() ? nullptr : vo->post.c_str(), vo->threads, &err);
    if (s != POT_OK && chk == POT_CHECK_OK) check(s, &err, "open verify");  // misuse, not a failed check
    if (s != POT_OK) {
      const std::string msg = pot_error_message(err);
      pot_error_free(err);
      if (vo->json) emit(true, {{"valid", false}, {"check", pot_opening_check_name(chk)}, {"message", msg}}, {});
      throw CliError(kExitRejected, std::string("opening rejected at ") + pot_opening_check_name(chk) + ": " + msg);
    }
    emit(vo->json, {{"valid", true}, {"check", "ok"}}, {"OK"});
  });
}

void add_witness_calls(CLI::App &app) {
  CLI::App *witness = app.get_subcommand("witness");
  struct Commit {
    std::string statement, identity, salt;
    bool json = false;
  };
  const std::string statement_help =
      "JSON file of the witness statement (docs/PROTOCOL.md section 19: run_id, step, challenge_id, mode, "
      "environment, kind and the kind's keys)";
  auto wc = std::make_shared<Commit>();
  CLI::App *commit = witness->add_subcommand("commit", "A witness commitment (salt drawn when not given)");
  commit->add_option("STATEMENT", wc->statement, statement_help)->required();
  commit->add_option("--identity", wc->identity, "committee member identity (hex)")->required();
  commit->add_option("--salt", wc->salt, "salt (hex, 16..64 bytes; default: 32 fresh bytes)");
  commit->add_flag("--json", wc->json, "print JSON");
  commit->callback([wc] {
    pot_error *err = nullptr;
    std::vector<uint8_t> salt;
    if (wc->salt.empty()) {
      salt.resize(POT_WITNESS_SALT_SIZE);
      check(pot_witness_salt(salt.data(), &err), &err, "salt");
    } else {
      salt = unhex(wc->salt, "--salt");
    }
    const std::vector<uint8_t> text = read_file(wc->statement);
    const std::string statement(text.begin(), text.end());
    const auto id = unhex(wc->identity, "--identity");
    pot_digest out;
    check(pot_witness_commitment(&out, statement.c_str(), salt.data(), salt.size(), id.data(), id.size(), &err), &err,
          "witness commit");
    emit(wc->json, {{"commitment", hex(out)}, {"salt", hex(salt.data(), salt.size())}},
         {hex(out), hex(salt.data(), salt.size())});
  });

  struct Reveal : Commit {
    std::string commitment;
  };
  auto wr = std::make_shared<Reveal>();
  CLI::App *reveal = witness->add_subcommand("reveal", "Check that a reveal opens a witness commitment");
  reveal->add_option("STATEMENT", wr->statement, statement_help)->required();
  reveal->add_option("--commitment", wr->commitment, "the posted commitment (hex)")->required();
  reveal->add_option("--identity", wr->identity, "revealing identity (hex)")->required();
  reveal->add_option("--salt", wr->salt, "revealed salt (hex)")->required();
  reveal->add_flag("--json", wr->json, "print JSON");
  reveal->callback([wr] {
    pot_error *err = nullptr;
    const pot_digest c = digest_arg(wr->commitment, "--commitment");
    const std::vector<uint8_t> text = read_file(wr->statement);
    const std::string statement(text.begin(), text.end());
    const auto salt = unhex(wr->salt, "--salt"), id = unhex(wr->identity, "--identity");
    check(pot_witness_verify_reveal(&c, statement.c_str(), salt.data(), salt.size(), id.data(), id.size(), &err),
          &err, "reveal rejected");
    emit(wr->json, {{"valid", true}}, {"OK"});
  });

  struct Verdict {
    std::string reveals, mode = "bitwise", committed;
    uint32_t quorum = 1;
    int64_t declared = 0;
    bool json = false;
  };
  auto wv = std::make_shared<Verdict>();
  CLI::App *verdict = witness->add_subcommand("verdict", "Verdict from revealed values (JSON file)");
  verdict->add_option("REVEALS", wv->reveals,
                      "JSON array of {\"identity\": hex, \"replayed_state\": hex, \"bucket\": int}")
      ->required();
  verdict->add_option("--mode", wv->mode, "bitwise or bucket")->check(CLI::IsMember({"bitwise", "bucket"}));
  verdict->add_option("--quorum", wv->quorum, "reveals the winning cluster needs")->capture_default_str();
  auto *committed = verdict->add_option("--committed", wv->committed, "bitwise: committed state digest of leaf t");
  auto *declared = verdict->add_option("--declared", wv->declared, "bucket: the miner's declared bucket");
  verdict->add_flag("--json", wv->json, "print JSON");
  verdict->callback([wv, committed, declared] {
    const bool bitwise = wv->mode == "bitwise";
    if (bitwise && !*committed) throw CliError(kExitUsage, "bitwise mode needs --committed");
    if (!bitwise && !*declared) throw CliError(kExitUsage, "bucket mode needs --declared");
    const auto bytes = read_file(wv->reveals);
    nlohmann::json reveals;
    try {
      reveals = nlohmann::json::parse(bytes.begin(), bytes.end());
    } catch (const nlohmann::json::exception &e) {
      throw CliError(kExitUsage, wv->reveals + ": not JSON");
    }
    if (!reveals.is_array()) throw CliError(kExitUsage, wv->reveals + ": expected an array of reveals");
    pot_error *err = nullptr;
    pot_verdict *v = nullptr;
    check(pot_verdict_new(&v, bitwise ? POT_WITNESS_BITWISE : POT_WITNESS_NORM_BUCKET, wv->quorum, &err), &err,
          "verdict");
    std::unique_ptr<pot_verdict, decltype(&pot_verdict_free)> guard(v, pot_verdict_free);
    for (const auto &r : reveals) {
      if (!r.is_object() || !r.contains("identity") || !r.contains("replayed_state") || !r.contains("bucket") ||
          !r["identity"].is_string() || !r["replayed_state"].is_string() || !r["bucket"].is_number_integer())
        throw CliError(kExitUsage, "each reveal needs identity (hex), replayed_state (hex) and bucket (integer)");
      const auto id = unhex(r["identity"].get<std::string>(), "identity");
      const pot_digest replayed = digest_arg(r["replayed_state"].get<std::string>(), "replayed_state");
      check(pot_verdict_add_reveal(v, id.data(), id.size(), &replayed, r["bucket"].get<int64_t>(), &err), &err,
            "reveal");
    }
    pot_digest c{};
    if (bitwise) c = digest_arg(wv->committed, "--committed");
    pot_verdict_outcome outcome;
    size_t cluster = 0;
    check(pot_verdict_decide(&outcome, &cluster, v, bitwise ? &c : nullptr, bitwise ? nullptr : &wv->declared, &err),
          &err, "verdict");
    const char *name = outcome == POT_VERDICT_PASS ? "PASS" : outcome == POT_VERDICT_FAIL ? "FAIL" : "INCONCLUSIVE";
    emit(wv->json, {{"verdict", name}, {"cluster_size", cluster}, {"reason", pot_verdict_reason(v)}},
         {std::string(name) + ": " + pot_verdict_reason(v)});
  });
}

}  // namespace

void add_open_commands(CLI::App &app) {
  CLI::App *open = app.add_subcommand("open", "Openings of challenged steps");
  open->require_subcommand(1);
  add_open_verify(open);
  add_witness_calls(app);
}

}  // namespace pot_cli
