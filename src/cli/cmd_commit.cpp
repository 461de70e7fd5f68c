// pot commit dataset|schedule|training and pot losscheck.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <sstream>

#include "cli_util.h"

namespace pot_cli {

namespace {

using Tree = std::unique_ptr<pot_tree, decltype(&pot_tree_free)>;

std::vector<std::string> proof_hex(const pot_bytes &p) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 32 <= p.len; i += 32) out.push_back(hex(p.data + i, 32));
  return out;
}

// Root, and optionally the proof of leaf `prove` (when >= 0), of leaves.
nlohmann::json root_and_proof(const std::vector<std::vector<uint8_t>> &leaves, long long prove) {
  pot_error *err = nullptr;
  pot_tree *t = nullptr;
  check(pot_tree_open(&t, nullptr, &err), &err, "tree");
  Tree tree(t, pot_tree_free);
  for (const auto &l : leaves) check(pot_tree_append(nullptr, t, l.data(), l.size(), &err), &err, "append");
  pot_digest root;
  check(pot_tree_root(&root, t, leaves.size(), &err), &err, "root");
  nlohmann::json j = {{"root", hex(root)}, {"size", leaves.size()}};
  if (prove >= 0) {
    pot_bytes p{};
    check(pot_tree_inclusion_proof(&p, t, static_cast<uint64_t>(prove), leaves.size(), &err), &err, "proof");
    j["index"] = prove;
    j["leaf"] = hex(leaves[static_cast<size_t>(prove)].data(), leaves[static_cast<size_t>(prove)].size());
    j["proof"] = proof_hex(p);
    pot_bytes_free(&p);
  }
  return j;
}

void add_commit_dataset(CLI::App *commit) {
  struct Dataset {
    std::vector<std::string> samples;
    long long prove = -1;
    bool json = false;
  };
  auto ds = std::make_shared<Dataset>();
  CLI::App *dataset = commit->add_subcommand("dataset", "Root over sample digests (one safetensors file per sample)");
  dataset->add_option("SAMPLES", ds->samples, "sample files, in dataset order")->required();
  dataset->add_option("--prove", ds->prove, "also print the membership proof of this sample index");
  dataset->add_flag("--json", ds->json, "print JSON");
  dataset->callback([ds] {
    pot_error *err = nullptr;
    std::vector<std::vector<uint8_t>> leaves;
    for (const std::string &f : ds->samples) {
      const auto bytes = read_file(f);
      pot_digest d;
      check(pot_sample_digest(&d, bytes.data(), bytes.size(), &err), &err, f.c_str());
      leaves.emplace_back(d.bytes, d.bytes + 32);
    }
    if (ds->prove >= static_cast<long long>(leaves.size()))
      throw CliError(kExitUsage, "--prove " + std::to_string(ds->prove) + ": the dataset has " +
                                     std::to_string(leaves.size()) + " samples");
    const nlohmann::json j = root_and_proof(leaves, ds->prove);
    std::vector<std::string> plain = {j["root"]};
    if (ds->prove >= 0)
      for (const auto &h : j["proof"]) plain.push_back(h);
    emit(ds->json, j, plain);
  });
}

void add_commit_stream(CLI::App *commit) {
  struct Stream {
    std::vector<std::string> shards, views;
    std::string token_dtype = "U16", output_dtype = "I64", out;
    uint32_t window = 0;
    long long prove = -1;
    bool json = false;
  };
  auto st = std::make_shared<Stream>();
  CLI::App *stream = commit->add_subcommand("stream", "Root of a token-stream dataset (token files, windows of W tokens)");
  stream->add_option("SHARDS", st->shards, "token files (uint16 or uint32, little-endian), in order")->required();
  stream->add_option("--window", st->window, "tokens per window (block size + 1 for next-token prediction)")
      ->required();
  stream->add_option("--view", st->views, "NAME:START:LENGTH, a tensor of the window's sample (default x:0:W-1 and "
                                          "y:1:W-1)")
      ->allow_extra_args(false);  // one NAME:START:LENGTH per --view: the shards follow
  stream->add_option("--token-dtype", st->token_dtype, "U16 (default) or U32");
  stream->add_option("--output-dtype", st->output_dtype, "I64 (default) or I32");
  stream->add_option("--out", st->out,
                     "write the stream file (stream.json: the descriptor and where each shard lies, relative to "
                     "the file) for `pot open make --dataset`");
  stream->add_option("--prove", st->prove, "also print the proof of this window (docs/PROTOCOL.md 15.1)");
  stream->add_flag("--json", st->json, "print JSON");
  stream->callback([st] {
    pot_error *err = nullptr;
    const pot_dtype dt = st->token_dtype == "U32" ? POT_DTYPE_U32 : POT_DTYPE_U16;
    if (st->token_dtype != "U16" && st->token_dtype != "U32")
      throw CliError(kExitUsage, "--token-dtype " + st->token_dtype + ": U16 or U32");
    nlohmann::json shards = nlohmann::json::array(), views = nlohmann::json::array();
    for (const std::string &f : st->shards) {
      pot_digest root;
      uint64_t tokens = 0;
      check(pot_stream_shard_root_file(&root, &tokens, f.c_str(), dt, &err), &err, f.c_str());
      shards.push_back({{"tokens", tokens}, {"root", hex(root)}});
    }
    if (st->views.empty() && st->window >= 2)
      st->views = {"x:0:" + std::to_string(st->window - 1), "y:1:" + std::to_string(st->window - 1)};
    for (const std::string &v : st->views) {
      const size_t a = v.find(':'), b = v.rfind(':');
      if (a == std::string::npos || a == b)
        throw CliError(kExitUsage, "--view " + v + ": NAME:START:LENGTH");
      try {
        views.push_back({{"name", v.substr(0, a)}, {"start", std::stoul(v.substr(a + 1, b - a - 1))},
                         {"length", std::stoul(v.substr(b + 1))}});
      } catch (const std::exception &) {
        throw CliError(kExitUsage, "--view " + v + ": START and LENGTH are numbers");
      }
    }
    const nlohmann::json desc = {{"token_dtype", st->token_dtype}, {"output_dtype", st->output_dtype},
                                 {"window", st->window}, {"views", views}, {"shards", shards}};
    pot_stream *raw = nullptr;
    check(pot_stream_from_json(&raw, desc.dump().c_str(), &err), &err, "stream");
    const std::unique_ptr<pot_stream, decltype(&pot_stream_free)> s(raw, pot_stream_free);
    pot_digest root;
    check(pot_stream_root(&root, s.get(), &err), &err, "root");
    if (!st->out.empty()) {
      // Shard paths relative to the stream file's directory: the directory
      // can move with its token files.
      const std::filesystem::path base = std::filesystem::absolute(st->out).parent_path();
      nlohmann::json files = nlohmann::json::array();
      for (const std::string &f : st->shards)
        files.push_back(std::filesystem::relative(std::filesystem::absolute(f), base).generic_string());
      const nlohmann::json file = {{"format", "pot-stream/1"}, {"stream", desc}, {"files", files}};
      const std::string text = file.dump(1) + "\n";
      write_file(st->out, std::vector<uint8_t>(text.begin(), text.end()));
    }
    nlohmann::json j = {{"dataset_root", hex(root)}, {"dataset_size", pot_stream_size(s.get())}, {"stream", desc}};
    std::vector<std::string> plain = {hex(root), std::to_string(pot_stream_size(s.get()))};
    if (st->prove >= 0) {
      uint32_t shard = 0;
      uint64_t offset = 0;
      check(pot_stream_locate(&shard, &offset, s.get(), static_cast<uint64_t>(st->prove), &err), &err, "--prove");
      pot_bytes proof{};
      check(pot_stream_prove_window(&proof, s.get(), static_cast<uint64_t>(st->prove), st->shards[shard].c_str(),
                                    &err),
            &err, "--prove");
      const std::string h = hex(proof.data, proof.len);
      pot_bytes_free(&proof);
      j["window"] = {{"index", st->prove}, {"shard", shard}, {"offset", offset}, {"proof", h}};
      plain.push_back(h);
    }
    emit(st->json, j, plain);
  });
}

void add_commit_schedule(CLI::App *commit) {
  struct Schedule {
    uint64_t seed = 0, dataset_size = 0, steps = 0;
    uint32_t batch = 0, micro = 1;
    std::string entries;
    long long prove = -1;
    bool json = false;
  };
  auto sc = std::make_shared<Schedule>();
  CLI::App *schedule = commit->add_subcommand("schedule", "Root of a schedule: seeded, or explicit entries (JSON)");
  auto *seed = schedule->add_option("--seed", sc->seed, "seeded schedule: the committed seed");
  auto *entries = schedule->add_option("--entries", sc->entries,
                                       "explicit schedule: JSON file, an array (one per step) of arrays of micro-batches");
  seed->excludes(entries);
  schedule->add_option("--dataset-size", sc->dataset_size, "samples in the dataset")->required();
  schedule->add_option("--batch", sc->batch, "seeded: samples per step");
  schedule->add_option("--microbatches", sc->micro, "seeded: micro-batches per step")->capture_default_str();
  schedule->add_option("--steps", sc->steps, "seeded: number of steps");
  schedule->add_option("--prove", sc->prove, "also print the entry of this step (from 1) and its proof");
  schedule->add_flag("--json", sc->json, "print JSON");
  schedule->callback([sc, seed, entries] {
    if (!*seed && !*entries) throw CliError(kExitUsage, "give --seed (seeded) or --entries (explicit)");
    pot_error *err = nullptr;
    std::vector<std::vector<uint8_t>> leaves;
    if (*seed) {
      if (!sc->batch || !sc->steps) throw CliError(kExitUsage, "a seeded schedule needs --batch and --steps");
      if (sc->prove < 0) {  // the root alone: no need to hold every entry
        pot_digest root;
        check(pot_seeded_schedule_root(&root, sc->seed, sc->dataset_size, sc->batch, sc->micro, sc->steps, &err),
              &err, "schedule");
        emit(sc->json, {{"root", hex(root)}, {"size", sc->steps}}, {hex(root)});
        return;
      }
      for (uint64_t t = 1; t <= sc->steps; ++t) {
        pot_bytes e{};
        check(pot_seeded_schedule_entry(&e, sc->seed, sc->dataset_size, sc->batch, sc->micro, t, &err), &err,
              "schedule");
        leaves.emplace_back(e.data, e.data + e.len);
        pot_bytes_free(&e);
      }
    } else {
      const auto bytes = read_file(sc->entries);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(bytes.begin(), bytes.end());
      } catch (const nlohmann::json::exception &e) {
        throw CliError(kExitUsage, sc->entries + ": not JSON: " + e.what());
      }
      if (!j.is_array()) throw CliError(kExitUsage, sc->entries + ": expected an array of steps");
      uint64_t step = 0;
      for (const auto &micro : j) {
        ++step;
        std::vector<uint64_t> idx;
        std::vector<uint32_t> sizes;
        try {
          for (const auto &m : micro) {
            sizes.push_back(static_cast<uint32_t>(m.size()));
            for (const auto &i : m) idx.push_back(i.get<uint64_t>());
          }
        } catch (const nlohmann::json::exception &e) {
          throw CliError(kExitUsage, "step " + std::to_string(step) + ": expected arrays of indices");
        }
        pot_bytes e{};
        check(pot_schedule_entry_encode(&e, step, idx.data(), idx.size(), sizes.data(), sizes.size(), sc->dataset_size,
                                        &err),
              &err, ("step " + std::to_string(step)).c_str());
        leaves.emplace_back(e.data, e.data + e.len);
        pot_bytes_free(&e);
      }
    }
    if (sc->prove == 0 || sc->prove > static_cast<long long>(leaves.size()))
      throw CliError(kExitUsage, "--prove takes a step from 1 to " + std::to_string(leaves.size()));
    const nlohmann::json j = root_and_proof(leaves, sc->prove > 0 ? sc->prove - 1 : -1);
    std::vector<std::string> plain = {j["root"]};
    if (sc->prove > 0) {
      plain.push_back(j["leaf"]);
      for (const auto &h : j["proof"]) plain.push_back(h);
    }
    emit(sc->json, j, plain);
  });
}

void add_commit_training(CLI::App *commit) {
  struct Training {
    std::string file;
    bool json = false;
  };
  auto tr = std::make_shared<Training>();
  CLI::App *training = commit->add_subcommand("training", "Validate a training commitment; print its run id");
  training->add_option("FILE", tr->file, "commitment (JSON, or canonical bytes as commitment.bin holds; '-' = stdin)")->required();
  training->add_flag("--json", tr->json, "print JSON");
  training->callback([tr] {
    pot_error *err = nullptr;
    const Commitment guard = load_commitment(tr->file);
    const pot_commitment *c = guard.get();
    pot_digest id;
    check(pot_commitment_run_id(&id, c, &err), &err, "run id");
    pot_bytes enc{};
    check(pot_commitment_encode(&enc, c, &err), &err, "encode");
    const std::string h = hex(enc.data, enc.len);
    pot_bytes_free(&enc);
    emit(tr->json, {{"run_id", hex(id)}, {"canonical", h}}, {hex(id)});
  });
}

void add_losscheck(CLI::App &app) {
  struct LossCheck {
    std::string file;
    double window = -1, tolerance = -1, max_drop = -1, frozen_steps = -1, regression_min_increase = -1;
    bool json = false;
  };
  auto lc = std::make_shared<LossCheck>();
  CLI::App *losscheck = app.add_subcommand("losscheck", "Flag broken or fabricated loss curves (docs/losscheck.md)");
  losscheck->add_option("FILE", lc->file, "losses: one number per line (step 1 first), or a JSON array; '-' = stdin")
      ->required();
  losscheck->add_option("--window", lc->window, "steps per window (default 20)");
  losscheck->add_option("--decrease-tolerance", lc->tolerance, "relative decrease required (default 0.02)");
  losscheck->add_option("--max-drop", lc->max_drop, "largest plausible one-step relative drop (default 0.9)");
  losscheck->add_option("--frozen-steps", lc->frozen_steps, "equal steps that count as frozen (default 10)");
  losscheck->add_option("--regression-min-increase", lc->regression_min_increase,
                        "relative increase of a regression (default 1)");
  losscheck->add_flag("--json", lc->json, "print JSON");
  losscheck->callback([lc] {
    const auto bytes = read_file(lc->file);
    std::vector<double> losses;
    const std::string text(bytes.begin(), bytes.end());
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '[') {
      try {
        for (const auto &v : nlohmann::json::parse(text)) losses.push_back(v.is_null() ? NAN : v.get<double>());
      } catch (const nlohmann::json::exception &e) {
        throw CliError(kExitUsage, lc->file + ": not a JSON array of numbers");
      }
    } else {
      size_t line = 0;
      std::istringstream in(text);
      for (std::string l; std::getline(in, l);) {
        ++line;
        l.erase(0, l.find_first_not_of(" \t\r"));
        l.erase(l.find_last_not_of(" \t\r") + 1);
        if (l.empty()) continue;
        try {
          size_t used = 0;
          losses.push_back(std::stod(l, &used));
          if (used != l.size()) throw std::invalid_argument(l);
        } catch (const std::exception &) {
          throw CliError(kExitUsage, lc->file + ": line " + std::to_string(line) + " is not a number");
        }
      }
    }
    pot_error *err = nullptr;
    pot_losscheck_params *p = nullptr;
    check(pot_losscheck_params_new(&p, &err), &err, "params");
    std::unique_ptr<pot_losscheck_params, decltype(&pot_losscheck_params_free)> pg(p, pot_losscheck_params_free);
    const std::pair<pot_losscheck_param, double> settings[] = {
        {POT_LOSSCHECK_WINDOW, lc->window},
        {POT_LOSSCHECK_DECREASE_TOLERANCE, lc->tolerance},
        {POT_LOSSCHECK_MAX_DROP, lc->max_drop},
        {POT_LOSSCHECK_FROZEN_MIN_STEPS, lc->frozen_steps},
        {POT_LOSSCHECK_REGRESSION_MIN_INCREASE, lc->regression_min_increase}};
    for (auto [param, value] : settings)
      if (value != -1) check(pot_losscheck_params_set(p, param, value, &err), &err, "parameter");
    pot_losscheck_report *r = nullptr;
    check(pot_losscheck_run(&r, losses.data(), losses.size(), p, &err), &err, "losscheck");
    std::unique_ptr<pot_losscheck_report, decltype(&pot_losscheck_report_free)> rg(r, pot_losscheck_report_free);
    nlohmann::json flags = nlohmann::json::array();
    std::vector<std::string> plain;
    for (size_t i = 0; i < pot_losscheck_report_count(r); ++i) {
      pot_loss_flag_kind kind;
      uint64_t a, b;
      const char *msg;
      check(pot_losscheck_report_flag(&kind, &a, &b, &msg, r, i, &err), &err, "flag");
      flags.push_back({{"kind", pot_loss_flag_name(kind)}, {"first_step", a}, {"last_step", b}, {"message", msg}});
      plain.push_back(std::string(pot_loss_flag_name(kind)) + " steps " + std::to_string(a) + "-" + std::to_string(b) +
                      ": " + msg);
    }
    if (plain.empty()) plain.push_back("no flags (" + std::to_string(losses.size()) + " steps)");
    emit(lc->json, {{"steps", losses.size()}, {"flags", flags}}, plain);
  });
}

}  // namespace

void add_commit_commands(CLI::App &app) {
  CLI::App *commit = app.add_subcommand("commit", "Dataset, schedule and training commitments");
  commit->require_subcommand(1);
  add_commit_dataset(commit);
  add_commit_stream(commit);
  add_commit_schedule(commit);
  add_commit_training(commit);
  add_losscheck(app);
}

}  // namespace pot_cli
