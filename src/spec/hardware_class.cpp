#include "spec/hardware_class.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "common/error.h"

namespace pot::spec {
namespace {

constexpr std::string_view kGrammar =
    "cpu-<arch>/aten:<capability>/onednn:<isa>, e.g. 'cpu-x86_64/aten:avx2/onednn:avx2' (protocol version 2; "
    "docs/PROTOCOL.md 14.4)";
constexpr size_t kMaxIsa = 32;

struct Arch {
  std::string_view name;
  std::array<std::string_view, 3> capabilities;  // ATen's CPUCapability values on that architecture
};
constexpr std::array<Arch, 4> kArches{{
    {"x86_64", {"default", "avx2", "avx512"}},
    {"aarch64", {"default", "", ""}},
    {"ppc64le", {"default", "vsx", ""}},
    {"s390x", {"default", "zvector", ""}},
}};

[[noreturn]] void bad(const std::string &s, const std::string &why) {
  fail(Status::kInvalidArgument, "spec: hardware_class '{}': {}; the form is {}", s, why, kGrammar);
}

bool isa_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

}  // namespace

std::string HardwareClass::str() const { return "cpu-" + arch + "/aten:" + capability + "/onednn:" + onednn; }

HardwareClass parse_hardware_class(const std::string &s) {
  constexpr std::string_view kCpu = "cpu-", kAten = "/aten:", kOnednn = "/onednn:";
  if (s.compare(0, kCpu.size(), kCpu) != 0) bad(s, "it does not start with 'cpu-' (this version knows CPU classes)");
  const size_t aten = s.find(kAten);
  const size_t onednn = s.find(kOnednn);
  if (aten == std::string::npos || onednn == std::string::npos || onednn < aten)
    bad(s, "it has no '/aten:' part followed by an '/onednn:' part");
  HardwareClass c;
  c.arch = s.substr(kCpu.size(), aten - kCpu.size());
  c.capability = s.substr(aten + kAten.size(), onednn - aten - kAten.size());
  c.onednn = s.substr(onednn + kOnednn.size());
  const auto arch = std::find_if(kArches.begin(), kArches.end(), [&](const Arch &a) { return a.name == c.arch; });
  if (arch == kArches.end())
    bad(s, fmt::format("architecture '{}' is none of x86_64, aarch64, ppc64le, s390x", c.arch));
  if (c.capability.empty() ||
      std::find(arch->capabilities.begin(), arch->capabilities.end(), c.capability) == arch->capabilities.end()) {
    std::string known;
    for (std::string_view k : arch->capabilities)
      if (!k.empty()) known += fmt::format("{}{}", known.empty() ? "" : ", ", k);
    bad(s, fmt::format("'{}' is not an ATen CPU capability of {} ({})", c.capability, c.arch, known));
  }
  if (c.onednn.empty() || c.onednn.size() > kMaxIsa || !std::all_of(c.onednn.begin(), c.onednn.end(), isa_char))
    bad(s, fmt::format("the oneDNN ISA must be 1..{} of [a-z0-9_] ('none' without oneDNN)", kMaxIsa));
  return c;
}

}  // namespace pot::spec
