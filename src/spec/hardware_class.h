#pragma once
// The execution spec's hardware_class (docs/PROTOCOL.md 14.4): what a CPU
// must compute like for a step to replay bit for bit. Measured
// (docs/determinism.md): ATen's CPU capability and oneDNN's instruction set
// each change the bits of a training step, so a class names both.
//
//   cpu-<arch>/aten:<capability>/onednn:<isa>
//
// Core code: only the grammar. The replay layer reads this process's class.
#include <string>

namespace pot::spec {

struct HardwareClass {
  std::string arch;        // x86_64, aarch64, ppc64le, s390x
  std::string capability;  // ATen's CPU capability, lower case: default, avx2, avx512, vsx, zvector
  std::string onednn;      // oneDNN's effective ISA (dnnl_cpu_isa2str without "cpu_isa_"), or "none"

  std::string str() const;  // the canonical string
};

// Parses a class; kInvalidArgument naming what is wrong (and the grammar)
// for anything but a canonical class of protocol version 2.
HardwareClass parse_hardware_class(const std::string &s);

}  // namespace pot::spec
