// Replays every step of a run directory written by tests/replay/train.py
// through the public C API (pot_replay_step) and compares each replayed S_t
// with the state the PyTorch trainer dumped: state digest and loss bits.
//
//   pot_check_run RUN_DIR [--spec SPEC.json] [--pre-dir DIR] [--samples-dir DIR]
//                 [--program FILE] [--steps A-B] [--shift-batch K] [--run-id HEX]
//
// Each step is replayed as a step of the run train.py trained (run.json's
// run_id: per-step seeds name it); --run-id replays it as another run's.
// --spec replaces the run's spec (e.g. another thread count), --pre-dir takes
// S_{t-1} from another directory, --samples-dir the samples, --program the
// model program, --shift-batch K feeds step t the batch of step t+K. Prints
// one JSON object per step and a summary line; exit 0 when every step
// matched, 1 when some did not, 2 on a usage error, 3 when a call failed
// (the JSON names the status).
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

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pot_check_run RUN_DIR [--spec F] [--pre-dir D] [--samples-dir D] [--program F] "
                         "[--steps A-B] [--shift-batch K] [--run-id HEX]\n");
    return 2;
  }
  const std::string run = argv[1];
  std::string spec_path = run + "/spec.json", pre_dir = run + "/states", samples_dir = run + "/samples",
              program = run + "/program.pt", run_id;
  uint64_t first = 1, last = 0;
  long shift = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--spec") spec_path = v;
    else if (k == "--pre-dir") pre_dir = v;
    else if (k == "--samples-dir") samples_dir = v;
    else if (k == "--program") program = v;
    else if (k == "--steps") std::sscanf(v.c_str(), "%" SCNu64 "-%" SCNu64, &first, &last);
    else if (k == "--shift-batch") shift = std::stol(v);
    else if (k == "--run-id") run_id = v;
    else {
      std::fprintf(stderr, "pot_check_run: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  pot_spec *spec = nullptr;
  pot_replay *replay = nullptr;
  unsigned matched = 0, mismatched = 0;
  try {
    const nlohmann::json meta = nlohmann::json::parse(read_text(run + "/run.json"));
    const nlohmann::json schedule = nlohmann::json::parse(read_text(run + "/schedule.json"));
    const uint64_t dataset_size = meta.at("dataset_size").get<uint64_t>();
    if (last == 0) last = meta.at("steps").get<uint64_t>();
    if (run_id.empty()) run_id = meta.at("run_id").get<std::string>();
    const pot_digest run_digest = pot_test::digest_of(run_id);
    pot_error *err = nullptr;
    check(pot_spec_from_json(&spec, read_text(spec_path).c_str(), &err), err);
    check(pot_replay_new(&replay, spec, program.c_str(), &err), err);
    for (uint64_t t = first; t <= last; ++t) {
      const long src = static_cast<long>(t) + shift;
      if (src < 1 || static_cast<size_t>(src) > schedule.size()) throw Failure{POT_E_OUT_OF_RANGE, "--shift-batch past the schedule"};
      const nlohmann::json &mbs = schedule.at(static_cast<size_t>(src - 1));
      std::vector<uint64_t> indices;
      std::vector<uint32_t> sizes;
      for (const auto &mb : mbs) {
        sizes.push_back(static_cast<uint32_t>(mb.size()));
        for (const auto &i : mb) indices.push_back(i.get<uint64_t>());
      }
      pot_bytes entry{nullptr, 0};
      check(pot_schedule_entry_encode(&entry, t, indices.data(), indices.size(), sizes.data(), sizes.size(),
                                      dataset_size, &err),
            err);
      pot_step_input *input = nullptr;
      check(pot_step_input_new(&input, &run_digest, numbered(pre_dir, t - 1).c_str(), entry.data, entry.len, &err),
            err);
      pot_bytes_free(&entry);
      for (uint64_t i : indices) {
        const std::string sample = read_text(numbered(samples_dir, i));
        check(pot_step_input_add_sample(input, reinterpret_cast<const uint8_t *>(sample.data()), sample.size(), &err),
              err);
      }
      const std::string post = numbered(run + "/states", t);
      pot_replay_result r = POT_REPLAY_RESULT_INIT;
      const auto t0 = std::chrono::steady_clock::now();
      const pot_status s = pot_replay_step(&r, replay, input, nullptr, &err);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      pot_step_input_free(input);
      check(s, err);
      pot_digest expected;
      check(pot_safetensors_digest_file(&expected, post.c_str(), 0, &err), err);
      uint64_t bits;
      std::memcpy(&bits, &r.loss, 8);
      char loss_hex[17];
      std::snprintf(loss_hex, sizeof loss_hex, "%016" PRIx64, bits);
      const std::string want_loss = meta.at("loss_bits").at(t - 1).get<std::string>();
      const bool digest_ok = std::memcmp(expected.bytes, r.post_state_digest.bytes, POT_DIGEST_SIZE) == 0;
      const bool loss_ok = want_loss == loss_hex;
      // The norm bucket the trainer's own S_{t-1} -> S_t implies (the
      // cross-architecture comparison).
      pot_safetensors *a = nullptr, *b = nullptr;
      double honest_norm = 0;
      check(pot_safetensors_open(&a, numbered(run + "/states", t - 1).c_str(), &err), err);
      check(pot_safetensors_open(&b, post.c_str(), &err), err);
      const pot_status ns = pot_update_norm(&honest_norm, a, b, "param/", &err);
      pot_safetensors_free(a);
      pot_safetensors_free(b);
      check(ns, err);
      int64_t honest_bucket = 0;
      check(pot_norm_bucket(&honest_bucket, honest_norm, pot_spec_norm_bucket_resolution(spec), &err), err);
      const bool bucket_ok = pot_norm_buckets_match(honest_bucket, r.norm_bucket) != 0;
      nlohmann::json line = {{"step", t},
                             {"match", digest_ok && loss_ok},
                             {"digest_match", digest_ok},
                             {"loss_match", loss_ok},
                             {"replayed_digest", hex(r.post_state_digest)},
                             {"committed_digest", hex(expected)},
                             {"loss_bits", loss_hex},
                             {"committed_loss_bits", want_loss},
                             {"update_norm", r.update_norm},
                             {"committed_update_norm", honest_norm},
                             {"norm_bucket", r.norm_bucket},
                             {"committed_norm_bucket", honest_bucket},
                             {"bucket_match", bucket_ok},
                             {"param_elements", r.gradient.param_elements},
                             {"moved_elements", r.gradient.moved_elements},
                             {"gradient_elements", r.gradient.gradient_elements},
                             {"optim_elements", r.gradient.optim_elements},
                             {"optim_gradient_elements", r.gradient.optim_gradient_elements},
                             {"gradient_ignored", r.gradient.ignored != 0},
                             {"replay_seconds", seconds}};
      std::cout << line.dump() << "\n";
      (digest_ok && loss_ok ? matched : mismatched) += 1;
    }
  } catch (const Failure &f) {
    std::cout << nlohmann::json({{"error", pot_status_name(f.status)}, {"message", f.message}}).dump() << "\n";
    pot_replay_free(replay);
    pot_spec_free(spec);
    return 3;
  } catch (const std::exception &e) {
    std::cout << nlohmann::json({{"error", "usage"}, {"message", e.what()}}).dump() << "\n";
    pot_replay_free(replay);
    pot_spec_free(spec);
    return 2;
  }
  std::cout << nlohmann::json({{"summary", true}, {"matched", matched}, {"mismatched", mismatched}}).dump() << "\n";
  pot_replay_free(replay);
  pot_spec_free(spec);
  return mismatched == 0 ? 0 : 1;
}
