// Handle types shared by more than one C API source file.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commit/commitment.h"
#include "commit/dataset.h"
#include "spec/spec.h"
#include "dispute/op_trace.h"
#include "hash/safetensors.h"
#include "task/task.h"
#include "pot.h"

struct pot_spec {
  pot::spec::ExecutionSpec spec;
};

struct pot_safetensors_writer {
  std::vector<pot::hash::StTensor> tensors;  // borrowed data
  std::map<std::string, size_t> names;
  std::map<std::string, std::string> metadata;
};

struct pot_safetensors {
  std::unique_ptr<pot::hash::SafetensorsFile> file;
};

struct pot_commitment {
  pot::commit::TrainingCommitment c;
  // The flagged steps the run sealed with on the ledger
  // (pot_commitment_set_sealed_flags), compared by check 32 when set.
  std::optional<std::vector<uint64_t>> sealed_flags = std::nullopt;
};

struct pot_task {
  pot::task::Task task;
};

// The inputs of one step (pot_step_input_new): copied, the entry decoded and
// every sample parsed as it is added, so the replay calls only read them.
struct pot_step_input {
  std::optional<pot::hash::Digest> run;  // needed under per_step (the seed names the run)
  std::string pre_state_path;
  pot::commit::ScheduleEntry entry;
  std::vector<uint64_t> indices;  // entry.indices(), flattened once: sample i is indices[i]'s
  std::vector<std::unique_ptr<pot::hash::SafetensorsFile>> samples;
};

struct pot_op_trace {
  std::unique_ptr<pot::dispute::OpTrace> trace;
  pot_replay_result result{};  // of the replay that recorded it
};
