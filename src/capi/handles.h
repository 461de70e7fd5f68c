// Handle types shared by more than one C API source file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commit/commitment.h"
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
};

struct pot_task {
  pot::task::Task task;
};

struct pot_op_trace {
  std::unique_ptr<pot::dispute::OpTrace> trace;
  pot_replay_result result{};  // of the replay that recorded it
};
