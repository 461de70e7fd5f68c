#pragma once
// This process's hardware class (spec/hardware_class.h), as LibTorch
// computes here: the build's architecture, the CPU capability ATen
// dispatches to (ATEN_CPU_CAPABILITY or the CPU) and the instruction set
// oneDNN runs (ONEDNN_MAX_CPU_ISA or the CPU). Both are fixed when LibTorch
// first uses them, so the class is one value per process.
#include <string>

#include "spec/spec.h"

namespace pot::replay {

// The class; kUnsupported when this LibTorch does not say its CPU
// capability, uses a oneDNN whose ISA cannot be read, or names one outside
// the form of protocol version 2. Thread-safe.
const std::string &hardware_class();

// Refuses (kUnsupported, naming both classes and the environment variables
// that select them) a spec whose hardware_class is not this process's: its
// steps do not replay bit for bit here.
void check_hardware_class(const spec::ExecutionSpec &spec);

}  // namespace pot::replay
