// pot seed | leaf | challenge | security | witness bucket.
#include <CLI/CLI.hpp>
#include <cstring>

#include "cli_util.h"

namespace pot_cli {

namespace {

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

using File = std::unique_ptr<pot_safetensors, decltype(&pot_safetensors_free)>;

File open_state(const std::string &path) {
  pot_error *err = nullptr;
  pot_safetensors *f = nullptr;
  check(pot_safetensors_open(&f, path.c_str(), &err), &err, path.c_str());
  return File(f, pot_safetensors_free);
}

void add_seed(CLI::App &app) {
  struct Seed {
    uint64_t base = 0, step = 0;
    std::string run_id;
    bool json = false;
  };
  auto sd = std::make_shared<Seed>();
  CLI::App *seed = app.add_subcommand("seed", "Seed of a step under the per_step policy");
  seed->add_option("--base", sd->base, "committed base seed")->required();
  seed->add_option("--run-id", sd->run_id, "the run (hex run id)")->required();
  seed->add_option("--step", sd->step, "step index")->required();
  seed->add_flag("--json", sd->json, "print JSON");
  seed->callback([sd] {
    pot_error *err = nullptr;
    uint64_t s;
    const pot_digest run = digest_arg(sd->run_id, "--run-id");
    check(pot_seed_derive(&s, sd->base, &run, sd->step, &err), &err, "seed");
    emit(sd->json, {{"base_seed", sd->base}, {"run_id", sd->run_id}, {"step", sd->step}, {"seed", s}},
         {std::to_string(s)});
  });
}

void add_leaf(CLI::App &app) {
  struct Leaf {
    uint64_t step = 0;
    std::string run_id, state, stats;
    double loss = 0, update_norm = 0;
    bool json = false;
  };
  auto lf = std::make_shared<Leaf>();
  CLI::App *leaf = app.add_subcommand("leaf", "Step leaf of the checkpoint log");
  leaf->add_option("--run-id", lf->run_id, "the run the step belongs to (hex digest)")->required();
  leaf->add_option("--step", lf->step, "step index (from 1)")->required();
  leaf->add_option("--state", lf->state, "state digest after the step (hex)")->required();
  leaf->add_option("--stats", lf->stats, "digest of the state's statistics table (hex; `pot hash stats` prints it)")
      ->required();
  leaf->add_option("--loss", lf->loss, "loss of the step")->required();
  leaf->add_option("--update-norm", lf->update_norm, "norm of the step's parameter update (`pot witness bucket --prefix param/ --json` prints it)")->required();
  leaf->add_flag("--json", lf->json, "print JSON");
  leaf->callback([lf] {
    pot_error *err = nullptr;
    const pot_digest run = digest_arg(lf->run_id, "--run-id");
    const pot_digest state = digest_arg(lf->state, "--state");
    const pot_digest stats = digest_arg(lf->stats, "--stats");
    uint8_t data[POT_STEP_LEAF_SIZE];
    check(pot_step_leaf_encode(data, &run, lf->step, &state, &stats, lf->loss, lf->update_norm, &err), &err, "leaf");
    pot_digest h;
    check(pot_merkle_leaf_hash(&h, data, sizeof data, &err), &err, "leaf hash");
    emit(lf->json, {{"leaf", hex(data, sizeof data)}, {"leaf_hash", hex(h)}}, {hex(data, sizeof data), hex(h)});
  });
}

void add_challenge(CLI::App &app) {
  struct Challenge {
    std::string beacon, run_id;
    uint64_t steps = 0;
    size_t rounds = 1;
    bool json = false;
  };
  auto ch = std::make_shared<Challenge>();
  CLI::App *chal = app.add_subcommand("challenge", "Steps challenged by a beacon value");
  chal->add_option("--beacon", ch->beacon, "beacon value (hex)")->required();
  chal->add_option("--run-id", ch->run_id, "run id (hex digest)")->required();
  chal->add_option("--steps", ch->steps, "number of steps of the run")->required();
  chal->add_option("--rounds", ch->rounds, "number of distinct challenges")->capture_default_str();
  chal->add_flag("--json", ch->json, "print JSON");
  chal->callback([ch] {
    pot_error *err = nullptr;
    const auto beacon = unhex(ch->beacon, "--beacon");
    const pot_digest id = digest_arg(ch->run_id, "--run-id");
    if (ch->rounds > pot_max_challenge_rounds())
      throw CliError(kExitUsage, "--rounds: at most " + std::to_string(pot_max_challenge_rounds()));
    std::vector<uint64_t> steps(ch->rounds);
    check(pot_challenge_derive(steps.data(), steps.size(), beacon.data(), beacon.size(), &id, ch->steps, &err),
          &err, "challenge");
    std::vector<std::string> plain;
    for (uint64_t s : steps) plain.push_back(std::to_string(s));
    emit(ch->json, {{"steps", steps}}, plain);
  });
}

void add_security(CLI::App &app) {
  struct Security {
    uint64_t steps = 0, forged = 0, challenges = 0, reward = 0;
    double fraction = -1, target = -1;
    bool json = false;
  };
  auto sec = std::make_shared<Security>();
  CLI::App *s = app.add_subcommand("security", "Detection probability, or challenges needed for a target");
  s->add_option("--steps", sec->steps, "steps of the run")->required();
  auto *fs = s->add_option("--forged-steps", sec->forged, "number of forged steps");
  auto *ff = s->add_option("--forged-fraction", sec->fraction, "fraction of forged steps (rounded up)");
  fs->excludes(ff);
  auto *k = s->add_option("--challenges", sec->challenges, "number of distinct challenges");
  auto *t = s->add_option("--target", sec->target, "detection probability to reach");
  k->excludes(t);
  auto *rw = s->add_option("--reward", sec->reward,
                           "a run's reward: also print the bond that makes forging worthless (PROTOCOL 12.2)");
  s->add_flag("--json", sec->json, "print JSON");
  s->callback([sec, fs, ff, k, t, rw] {
    if (!*fs && !*ff) throw CliError(kExitUsage, "give --forged-steps or --forged-fraction");
    if (!*k && !*t) throw CliError(kExitUsage, "give --challenges or --target");
    uint64_t forged = sec->forged;
    if (*ff) {
      if (!(sec->fraction >= 0 && sec->fraction <= 1)) throw CliError(kExitUsage, "--forged-fraction must be in [0, 1]");
      forged = static_cast<uint64_t>(std::ceil(sec->fraction * static_cast<double>(sec->steps)));
    }
    pot_error *err = nullptr;
    nlohmann::json j = {{"steps", sec->steps}, {"forged", forged}};
    std::vector<std::string> plain;
    double p = 0;
    if (*k) {
      check(pot_security_detection_probability(&p, sec->steps, forged, sec->challenges, &err), &err, "security");
      j["challenges"] = sec->challenges;
      j["detection_probability"] = p;
      plain.push_back(fmt_double(p));
    } else {
      uint64_t needed;
      check(pot_security_challenges_needed(&needed, sec->steps, forged, sec->target, &err), &err, "security");
      j["target"] = sec->target;
      j["challenges_needed"] = needed;
      plain.push_back(std::to_string(needed));
      check(pot_security_detection_probability(&p, sec->steps, forged, needed, &err), &err, "security");
    }
    if (*rw) {
      // The bond at the detection probability the challenges give
      // (with --target: that of the challenges needed, at least the target).
      uint64_t bond;
      check(pot_security_bond(&bond, sec->reward, p, &err), &err, "security");
      j["reward"] = sec->reward;
      j["bond"] = bond;
      plain.push_back(std::to_string(bond));
    }
    emit(sec->json, j, plain);
  });
}

void add_witness_bucket(CLI::App &app) {
  CLI::App *witness = app.add_subcommand("witness", "Witness values");
  witness->require_subcommand(1);
  struct Bucket {
    std::string pre, post, prefix;
    double norm = -1;
    uint32_t resolution = 0;
    bool json = false;
  };
  auto bk = std::make_shared<Bucket>();
  CLI::App *bucket = witness->add_subcommand("bucket", "Norm bucket of an update (two states) or of a norm");
  auto *pre = bucket->add_option("--pre", bk->pre, "state before the step (safetensors)");
  auto *post = bucket->add_option("--post", bk->post, "state after the step (safetensors)");
  pre->needs(post);
  post->needs(pre);
  auto *nm = bucket->add_option("--norm", bk->norm, "a norm instead of two states");
  nm->excludes(pre);
  bucket->add_option("--prefix", bk->prefix, "only tensors whose names start with this");
  bucket->add_option("--resolution", bk->resolution, "buckets per doubling (1..65536)")->required();
  bucket->add_flag("--json", bk->json, "print JSON");
  bucket->callback([bk, nm, pre] {
    if (!*nm && !*pre) throw CliError(kExitUsage, "give --pre and --post, or --norm");
    pot_error *err = nullptr;
    double norm = bk->norm;
    if (*pre) {
      const File a = open_state(bk->pre), b = open_state(bk->post);
      check(pot_update_norm(&norm, a.get(), b.get(), bk->prefix.c_str(), &err), &err, "update norm");
    }
    int64_t bucket_value;
    check(pot_norm_bucket(&bucket_value, norm, bk->resolution, &err), &err, "bucket");
    emit(bk->json, {{"norm", norm}, {"resolution", bk->resolution}, {"bucket", bucket_value}},
         {std::to_string(bucket_value)});
  });
}

}  // namespace

void add_protocol_commands(CLI::App &app) {
  add_seed(app);
  add_leaf(app);
  add_challenge(app);
  add_security(app);
  add_witness_bucket(app);
}

}  // namespace pot_cli
