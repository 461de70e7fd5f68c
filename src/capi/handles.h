// Handle types shared by more than one C API source file.
#pragma once

#include <memory>

#include "commit/commitment.h"
#include "commit/spec.h"
#include "hash/safetensors.h"
#include "pot.h"

struct pot_spec {
  pot::commit::ExecutionSpec spec;
};

struct pot_safetensors {
  std::unique_ptr<pot::hash::SafetensorsFile> file;
};

struct pot_commitment {
  pot::commit::TrainingCommitment c;
};
