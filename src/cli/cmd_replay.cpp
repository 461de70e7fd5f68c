// pot replay, pot verify, pot open make, pot checkpoints state: the replay
// layer (LibTorch) through the C API. In a libpot built without LibTorch
// they exit 3 with POT_E_UNSUPPORTED.
#include <CLI/CLI.hpp>
#include <cstring>
#include <optional>

#include "cli_util.h"

namespace pot_cli {

namespace {

const char *or_null(const std::string &s) { return s.empty() ? nullptr : s.c_str(); }

std::string text_of(pot_bytes &b) {
  std::string s(reinterpret_cast<const char *>(b.data), b.len);
  pot_bytes_free(&b);
  return s;
}

nlohmann::json gradient_json(const pot_gradient_trace &g) {
  return {{"learning_rate", g.learning_rate},
          {"param_elements", g.param_elements},
          {"moved_elements", g.moved_elements},
          {"gradient_elements", g.gradient_elements},
          {"optim_elements", g.optim_elements},
          {"optim_gradient_elements", g.optim_gradient_elements},
          {"ignored", g.ignored != 0}};
}

nlohmann::json verify_json(const pot_verify_result &r) {
  nlohmann::json j = {{"check", pot_opening_check_name(r.check)}, {"replayed", r.replayed != 0}};
  if (r.replayed) {
    j["replayed_state"] = hex(r.replayed_state_digest);
    j["committed_state"] = hex(r.committed_state_digest);
    j["loss"] = r.loss;
    j["committed_loss"] = r.committed_loss;
    j["update_norm"] = r.update_norm;
    j["norm_bucket"] = r.norm_bucket;
    j["committed_update_norm"] = r.committed_update_norm;
    j["committed_norm_bucket"] = r.committed_norm_bucket;
    j["loss_error"] = r.loss_error;
    j["update_error"] = r.update_error;
    j["tensor_update_error"] = r.tensor_update_error;
    j["gradient"] = gradient_json(r.gradient);
  }
  return j;
}

void add_replay(CLI::App &app) {
  // pot replay
  struct Replay {
    ReplayStep step;
    std::string out;
  };
  auto ro = std::make_shared<Replay>();
  CLI::App *rp = app.add_subcommand("replay", "Replay one training step (LibTorch)");
  add_step_options(rp, ro->step);
  rp->add_option("--out", ro->out, "write the replayed S_t here");
  rp->callback([ro] {
    const auto l = load_step(ro->step);
    pot_error *err = nullptr;
    pot_replay_result res = POT_REPLAY_RESULT_INIT;
    check(pot_replay_step(&res, l->replay.get(), l->input.get(), or_null(ro->out), &err), &err, "replay");
    emit(ro->step.json,
         {{"state_digest", hex(res.post_state_digest)}, {"loss", res.loss}, {"update_norm", res.update_norm},
          {"norm_bucket", res.norm_bucket}, {"gradient", gradient_json(res.gradient)}},
         {hex(res.post_state_digest), nlohmann::json(res.loss).dump()});
  });
}

void add_verify(CLI::App &app) {
  // pot verify
  struct Verify {
    std::string manifest, commitment, spec, program, root, pre, post, mode = "bitwise";
    uint64_t step = 0, size = 0;
    std::optional<uint64_t> challenge_id;
    uint32_t threads = 0;
    bool json = false;
    SealedFlags sealed;
  };
  auto vo = std::make_shared<Verify>();
  CLI::App *vf = app.add_subcommand("verify", "Verify a challenged step: the opening's checks, then the replay");
  vf->add_option("MANIFEST", vo->manifest, "opening manifest (canonical bytes)")->required();
  vf->add_option("--step", vo->step, "the challenged step")->required();
  vf->add_option("--commitment", vo->commitment, "training commitment (JSON or canonical bytes)")->required();
  vf->add_option("--spec", vo->spec, "execution spec (JSON or canonical bytes)")->required();
  vf->add_option("--program", vo->program, "TorchScript model program")->required();
  vf->add_option("--root", vo->root, "posted log root (hex)")->required();
  vf->add_option("--size", vo->size, "leaves under the posted root")->required();
  vf->add_option("--pre-state", vo->pre, "served S_{t-1}")->required();
  vf->add_option("--post-state", vo->post, "served S_t (required with --mode bucket)");
  vf->add_option("--mode", vo->mode, "bitwise or bucket")->check(CLI::IsMember({"bitwise", "bucket"}));
  vf->add_option("--threads", vo->threads, "intra-op threads (0 = the spec's, or this process's under pot-repro/1; under native, "
                  "others only with --mode bucket)");
  vf->add_option("--challenge-id", vo->challenge_id,
                 "also print the witness statement on this ledger challenge (docs/PROTOCOL.md section 19)");
  vf->add_flag("--json", vo->json, "print JSON");
  add_sealed_flags(vf, vo->sealed);
  vf->callback([vo] {
    const Commitment c = load_commitment(vo->commitment);
    apply_sealed_flags(vo->sealed, c.get());
    const Spec spec = load_spec(vo->spec, false, true);
    const pot_digest root = digest_arg(vo->root, "--root");
    const auto manifest = read_file(vo->manifest);
    pot_error *err = nullptr;
    pot_verify_result r = POT_VERIFY_RESULT_INIT;
    const pot_status s = pot_verify_step(
        &r, c.get(), spec.get(), vo->program.c_str(), vo->step, vo->size, &root, manifest.data(), manifest.size(),
        vo->pre.c_str(), or_null(vo->post), vo->mode == "bucket" ? POT_VERIFY_NORM_BUCKET : POT_VERIFY_BITWISE,
        vo->threads, &err);
    if (s != POT_OK && r.check == POT_CHECK_OK) check(s, &err, "verify");  // misuse, not a failed check
    nlohmann::json j = verify_json(r);
    if (vo->challenge_id) {
      // What a committee member commits to: the challenge, this process's
      // environment, and the replayed value or the failed check.
      pot_error *werr = nullptr;
      pot_digest run_id;
      check(pot_commitment_run_id(&run_id, c.get(), &werr), &werr, "run id");
      pot_bytes st{};
      check(pot_witness_statement(&st, &r, spec.get(), &run_id, vo->step, *vo->challenge_id,
                                  vo->mode == "bucket" ? POT_VERIFY_NORM_BUCKET : POT_VERIFY_BITWISE, vo->threads,
                                  &werr),
            &werr, "witness statement");
      j["statement"] = nlohmann::json::parse(std::string(reinterpret_cast<const char *>(st.data), st.len));
      pot_bytes_free(&st);
    }
    if (s != POT_OK) {
      const std::string msg = pot_error_message(err);
      pot_error_free(err);
      j["valid"] = false;
      j["message"] = msg;
      j["status"] = pot_status_name(s);
      if (vo->json) emit(true, j, {});
      throw CliError(kExitRejected, std::string("step rejected at ") + pot_opening_check_name(r.check) + ": " + msg);
    }
    j["valid"] = true;
    emit(vo->json, j, {"OK " + hex(r.replayed_state_digest)});
  });
}

void add_open_make(CLI::App &app) {
  // pot open make
  struct Make {
    std::string dir, dataset, out;
    uint64_t step = 0, size = 0;
    bool post = false, json = false;
  };
  auto mo = std::make_shared<Make>();
  CLI::App *open = app.get_subcommand("open");
  CLI::App *make = open->add_subcommand("make", "Serve the opening of a step from a checkpoint directory");
  make->add_option("DIR", mo->dir, "checkpoint directory (written by a pot recorder)")->required();
  make->add_option("--step", mo->step, "the challenged step")->required();
  make->add_option("--size", mo->size, "leaves of the posted root the proofs are for (default: all)");
  make->add_option("--dataset", mo->dataset, "the dataset: a directory of samples (%06d.safetensors by index), or a token stream (stream.json, or a directory holding one)")->required();
  make->add_option("--out", mo->out, "manifest file to write")->required();
  make->add_flag("--post-state", mo->post, "serve S_t too (the cross-architecture path)");
  make->add_flag("--json", mo->json, "print JSON");
  make->callback([mo] {
    pot_error *err = nullptr;
    pot_checkpoints *c = nullptr;
    check(pot_checkpoints_open(&c, mo->dir.c_str(), &err), &err, mo->dir.c_str());
    std::unique_ptr<pot_checkpoints, decltype(&pot_checkpoints_free)> guard(c, pot_checkpoints_free);
    const uint64_t size = mo->size ? mo->size : pot_checkpoints_size(c);
    pot_bytes m{nullptr, 0};
    check(pot_checkpoints_opening(&m, c, mo->step, size, mo->dataset.c_str(), mo->post ? 1 : 0, &err), &err,
          "open make");
    std::vector<uint8_t> bytes(m.data, m.data + m.len);
    pot_bytes_free(&m);
    write_file(mo->out, bytes);
    pot_bytes pre{nullptr, 0};
    check(pot_checkpoints_state_path(&pre, nullptr, c, mo->step - 1, mo->dataset.c_str(), &err), &err, "pre-state");
    nlohmann::json j = {{"manifest", mo->out}, {"bytes", bytes.size()}, {"log_size", size}, {"pre_state", text_of(pre)}};
    std::vector<std::string> plain = {mo->out, j["pre_state"].get<std::string>()};
    if (mo->post) {
      pot_bytes post{nullptr, 0};
      check(pot_checkpoints_state_path(&post, nullptr, c, mo->step, mo->dataset.c_str(), &err), &err, "post-state");
      j["post_state"] = text_of(post);
      plain.push_back(j["post_state"].get<std::string>());
    }
    emit(mo->json, j, plain);
  });
}

void add_checkpoints_flags(CLI::App *ck) {
  // pot checkpoints flags
  struct Flags {
    std::string dir;
    uint64_t size = 0;
    bool json = false;
  };
  auto fo = std::make_shared<Flags>();
  CLI::App *fl = ck->add_subcommand("flags", "The run's flagged steps, from its statistics tables: what it seals with");
  fl->add_option("DIR", fo->dir, "checkpoint directory")->required();
  fl->add_option("--size", fo->size, "leaves of the log (default: all)");
  fl->add_flag("--json", fo->json, "print JSON");
  fl->callback([fo] {
    pot_error *err = nullptr;
    pot_checkpoints *c = nullptr;
    check(pot_checkpoints_open(&c, fo->dir.c_str(), &err), &err, fo->dir.c_str());
    std::unique_ptr<pot_checkpoints, decltype(&pot_checkpoints_free)> guard(c, pot_checkpoints_free);
    const uint64_t size = fo->size ? fo->size : pot_checkpoints_size(c);
    pot_bytes text{nullptr, 0};
    check(pot_checkpoints_run_flags(&text, c, size, &err), &err, "flags");
    const nlohmann::json steps = nlohmann::json::parse(text_of(text));
    nlohmann::json list = nlohmann::json::array();
    std::vector<std::string> plain;
    for (const auto &s : steps) {
      list.push_back(s["step"]);
      std::string line("step ");
      line += s["step"].dump();
      line += ':';
      for (const auto &f : s["flags"]) {
        line += ' ';
        line += f["rule"].get<std::string>();
        line += ' ';
        line += f["tensor"].get<std::string>();
      }
      plain.push_back(line);
    }
    if (plain.empty()) plain.push_back("no step is flagged");
    emit(fo->json, {{"log_size", size}, {"flagged_steps", list}, {"steps", steps}}, plain);
  });
}

void add_checkpoints_state(CLI::App &app) {
  // pot checkpoints state
  struct State {
    std::string dir, dataset;
    uint64_t step = 0;
    bool json = false;
  };
  auto so = std::make_shared<State>();
  CLI::App *ck = app.add_subcommand("checkpoints", "Checkpoint directories written by a recorder");
  ck->require_subcommand(1);
  CLI::App *st = ck->add_subcommand("state", "Path of S_t, re-derived from the nearest checkpoint when needed");
  st->add_option("DIR", so->dir, "checkpoint directory")->required();
  st->add_option("--step", so->step, "t (0 = S_0)")->required();
  st->add_option("--dataset", so->dataset, "the dataset: a directory of samples (%06d.safetensors by index), or a token stream (stream.json, or a directory holding one)")->required();
  st->add_flag("--json", so->json, "print JSON");
  st->callback([so] {
    pot_error *err = nullptr;
    pot_checkpoints *c = nullptr;
    check(pot_checkpoints_open(&c, so->dir.c_str(), &err), &err, so->dir.c_str());
    std::unique_ptr<pot_checkpoints, decltype(&pot_checkpoints_free)> guard(c, pot_checkpoints_free);
    pot_bytes p{nullptr, 0};
    uint64_t replayed = 0;
    check(pot_checkpoints_state_path(&p, &replayed, c, so->step, so->dataset.c_str(), &err), &err, "state");
    const std::string path = text_of(p);
    emit(so->json, {{"path", path}, {"replayed_steps", replayed}}, {path});
  });
  add_checkpoints_flags(ck);
}

}  // namespace

void add_replay_commands(CLI::App &app) {
  add_replay(app);
  add_verify(app);
  add_open_make(app);
  add_checkpoints_state(app);
}

}  // namespace pot_cli
