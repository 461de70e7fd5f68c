// Feeds a run directory of tests/replay/train.py through the C API recorder
// as a trainer would have, step by step: S_0, the training commitment (built
// from the samples and the schedule), then begin_step / end_step with every
// dumped state and the step's loss. The checkpoint directory it writes is
// what the miner serves openings from.
//
//   pot_record_run RUN_DIR OUT_DIR [--every K] [--samples DIR] [--identity HEX]
//
// --samples commits to another sample directory than the one trained on (a
// miner that trains on other data than it commits to). Prints one JSON
// object: run_id, root, size, seeds (per step, from begin_step). Exit 0, or
// 3 with {"error": status, "message": ...}.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pot.h"
#include "run_util.h"

using pot_test::check;
using pot_test::Failure;
using pot_test::hex;
using pot_test::numbered;
using pot_test::read_text;

namespace {

// A writer holding every tensor of an opened file (borrowed from its map).
pot_safetensors_writer *writer_of(const pot_safetensors *f) {
  pot_error *err = nullptr;
  pot_safetensors_writer *w = nullptr;
  check(pot_safetensors_writer_new(&w, &err), err);
  for (size_t i = 0; i < pot_safetensors_count(f); ++i) {
    const char *name;
    pot_dtype dtype;
    const uint64_t *shape;
    size_t ndim, nbytes;
    const void *data;
    check(pot_safetensors_tensor(&name, &dtype, &shape, &ndim, &data, &nbytes, f, i, &err), err);
    check(pot_safetensors_writer_add(w, name, dtype, shape, ndim, data, nbytes, &err), err);
  }
  return w;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: pot_record_run RUN_DIR OUT_DIR [--every K] [--samples DIR] [--identity HEX]\n");
    return 2;
  }
  const std::string run = argv[1], out = argv[2];
  std::string samples = run + "/samples", identity = "6d696e6572";  // "miner"
  uint64_t every = 5;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--every") every = std::stoull(v);
    else if (k == "--samples") samples = v;
    else if (k == "--identity") identity = v;
    else {
      std::fprintf(stderr, "pot_record_run: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  pot_spec *spec = nullptr;
  pot_recorder *rec = nullptr;
  pot_commitment *commitment = nullptr;
  int rc = 0;
  try {
    pot_error *err = nullptr;
    const nlohmann::json meta = nlohmann::json::parse(read_text(run + "/run.json"));
    const nlohmann::json schedule = nlohmann::json::parse(read_text(run + "/schedule.json"));
    const uint64_t steps = meta.at("steps").get<uint64_t>(), dataset_size = meta.at("dataset_size").get<uint64_t>();
    check(pot_spec_from_json(&spec, read_text(run + "/spec.json").c_str(), &err), err);
    check(pot_recorder_new(&rec, out.c_str(), spec, (run + "/program.pt").c_str(), every, &err), err);

    // S_0.
    pot_safetensors *s0 = nullptr;
    check(pot_safetensors_open(&s0, numbered(run + "/states", 0).c_str(), &err), err);
    pot_safetensors_writer *w0 = writer_of(s0);
    pot_digest initial;
    const pot_status s = pot_recorder_start(&initial, rec, w0, &err);
    pot_safetensors_writer_free(w0);
    pot_safetensors_free(s0);
    check(s, err);

    // The commitment: dataset root over the committed samples, schedule root.
    pot_tree *data = nullptr, *sched = nullptr;
    check(pot_tree_open(&data, nullptr, &err), err);
    for (uint64_t i = 0; i < dataset_size; ++i) {
      const std::string p = read_text(numbered(samples, i));
      pot_digest d;
      check(pot_sample_digest(&d, reinterpret_cast<const uint8_t *>(p.data()), p.size(), &err), err);
      uint64_t idx;
      check(pot_tree_append(&idx, data, d.bytes, sizeof d.bytes, &err), err);
    }
    std::vector<pot_bytes> entries;
    check(pot_tree_open(&sched, nullptr, &err), err);
    for (uint64_t t = 1; t <= steps; ++t) {
      std::vector<uint64_t> indices;
      std::vector<uint32_t> sizes;
      for (const auto &mb : schedule.at(t - 1)) {
        sizes.push_back(static_cast<uint32_t>(mb.size()));
        for (const auto &i : mb) indices.push_back(i.get<uint64_t>());
      }
      pot_bytes e{nullptr, 0};
      check(pot_schedule_entry_encode(&e, t, indices.data(), indices.size(), sizes.data(), sizes.size(), dataset_size,
                                      &err),
            err);
      uint64_t idx;
      check(pot_tree_append(&idx, sched, e.data, e.len, &err), err);
      entries.push_back(e);
    }
    pot_digest data_root, sched_root, spec_digest;
    check(pot_tree_root(&data_root, data, dataset_size, &err), err);
    check(pot_tree_root(&sched_root, sched, steps, &err), err);
    check(pot_spec_digest(&spec_digest, spec, &err), err);
    pot_tree_free(data);
    pot_tree_free(sched);
    // The task this run answers to: its S_0, schedule and dataset, one
    // bitwise challenge per run.
    pot_bytes spec_json{nullptr, 0};
    check(pot_spec_to_json(&spec_json, spec, &err), err);
    const nlohmann::json tj = {
        {"owner", "6f776e6572"},
        {"spec", nlohmann::json::parse(reinterpret_cast<const char *>(spec_json.data))},
        {"dataset_root", hex(data_root)},
        {"dataset_size", dataset_size},
        {"initial_state", {{"published_digest", hex(initial)}}},
        {"schedule", {{"listed_root", hex(sched_root)}}},
        {"min_steps", steps},
        {"max_steps", steps},
        {"challenge_policy", {{"rounds", 1}, {"mode", "bitwise"}, {"committee_size", 1}}},
        {"end_height", 1000000}};
    pot_bytes_free(&spec_json);
    pot_task *task = nullptr;
    check(pot_task_from_json(&task, tj.dump().c_str(), &err), err);
    pot_digest task_id;
    check(pot_task_id(&task_id, task, &err), err);
    pot_task_free(task);
    const nlohmann::json cj = {{"task_id", hex(task_id)},         {"initial_state_digest", hex(initial)},
                               {"schedule_root", hex(sched_root)}, {"dataset_root", hex(data_root)},
                               {"dataset_size", dataset_size},     {"spec_digest", hex(spec_digest)},
                               {"declared_steps", steps},          {"miner_identity", identity}};
    check(pot_commitment_from_json(&commitment, cj.dump().c_str(), &err), err);
    std::vector<const uint8_t *> ptrs;
    std::vector<size_t> lens;
    for (const pot_bytes &e : entries) {
      ptrs.push_back(e.data);
      lens.push_back(e.len);
    }
    const pot_status sc = pot_recorder_set_commitment(rec, commitment, ptrs.data(), lens.data(), ptrs.size(), &err);
    for (pot_bytes &e : entries) pot_bytes_free(&e);
    check(sc, err);

    // Training, as the recorder sees it.
    nlohmann::json seeds = nlohmann::json::array(), end_seconds = nlohmann::json::array();
    for (uint64_t t = 1; t <= steps; ++t) {
      uint64_t seed = 0;
      check(pot_recorder_begin_step(&seed, rec, t, &err), err);
      seeds.push_back(seed);
      pot_safetensors *st = nullptr;
      check(pot_safetensors_open(&st, numbered(run + "/states", t).c_str(), &err), err);
      pot_safetensors_writer *w = writer_of(st);
      const uint64_t bits = std::stoull(meta.at("loss_bits").at(t - 1).get<std::string>(), nullptr, 16);
      double loss;
      std::memcpy(&loss, &bits, 8);
      const auto t0 = std::chrono::steady_clock::now();
      const pot_status se = pot_recorder_end_step(nullptr, rec, w, loss, &err);
      end_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      pot_safetensors_writer_free(w);
      pot_safetensors_free(st);
      check(se, err);
    }
    pot_digest root, run_id;
    check(pot_recorder_finish(&root, rec, &err), err);
    check(pot_commitment_run_id(&run_id, commitment, &err), err);
    std::cout << nlohmann::json({{"run_id", hex(run_id)}, {"root", hex(root)}, {"size", pot_recorder_size(rec)},
                                 {"seeds", seeds}, {"end_step_seconds", end_seconds}})
                     .dump()
              << "\n";
  } catch (const Failure &f) {
    std::cout << nlohmann::json({{"error", pot_status_name(f.status)}, {"message", f.message}}).dump() << "\n";
    rc = 3;
  } catch (const std::exception &e) {
    std::cout << nlohmann::json({{"error", "usage"}, {"message", e.what()}}).dump() << "\n";
    rc = 2;
  }
  pot_commitment_free(commitment);
  pot_recorder_free(rec);
  pot_spec_free(spec);
  return rc;
}
