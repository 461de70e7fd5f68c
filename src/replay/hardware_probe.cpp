#include "replay/hardware_probe.h"

#include <dlfcn.h>

#include <optional>

#include <ATen/Context.h>
#include <ATen/Version.h>

#include "spec/cpu_isa.h"
#include "spec/hardware_class.h"
#include "common/error.h"

namespace pot::replay {
namespace {

const char *build_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#else
  fail(Status::kUnsupported, "hardware class: this build's architecture has no class (docs/PROTOCOL.md 14.4)");
#endif
}

// ATen names its capability only in show_config() ("CPU capability usage:
// AVX2"; LibTorch 1.13 does not export get_cpu_capability()).
std::string aten_capability() {
  const std::string config = at::show_config();
  constexpr std::string_view kKey = "CPU capability usage: ";
  const size_t at = config.find(kKey);
  if (at == std::string::npos)
    fail(Status::kUnsupported, "hardware class: LibTorch's show_config() does not name its CPU capability");
  const size_t end = config.find('\n', at);
  const std::string v = config.substr(at + kKey.size(), end == std::string::npos ? end : end - at - kKey.size());
  if (v == "NO AVX" || v == "DEFAULT") return "default";
  if (v == "AVX2") return "avx2";
  if (v == "AVX512") return "avx512";
  if (v == "VSX") return "vsx";
  if (v == "Z VECTOR" || v == "ZVECTOR") return "zvector";
  fail(Status::kUnsupported, "hardware class: LibTorch's CPU capability '{}' has no class", v);
}

// oneDNN's effective ISA through its C API, from the copy LibTorch loaded.
std::string onednn_isa() {
  if (!at::hasMKLDNN()) return "none";
  using GetIsa = int (*)();
  using IsaName = const char *(*)(int);
  void *lib = dlopen("libdnnl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  void *get = dlsym(lib ? lib : RTLD_DEFAULT, "dnnl_get_effective_cpu_isa");
  void *name = dlsym(lib ? lib : RTLD_DEFAULT, "dnnl_cpu_isa2str");
  if (lib) dlclose(lib);  // RTLD_NOLOAD took a reference; LibTorch holds its own
  // A oneDNN linked into LibTorch with its symbols hidden (the torch wheels
  // on PyPI): its ISA derived from the CPU by the rule, and in the names, of
  // the oneDNN release LibTorch reports it carries.
  if (!get || !name) {
    const std::optional<spec::OnednnVersion> v = spec::onednn_version_in(at::show_config());
    if (!v)
      fail(Status::kUnsupported,
           "hardware class: LibTorch links oneDNN with its C API hidden and its show_config() names no oneDNN "
           "version, so which ISA it runs cannot be told");
    return spec::derived_onednn_isa(*v);
  }
  const char *s = reinterpret_cast<IsaName>(name)(reinterpret_cast<GetIsa>(get)());
  std::string v = s ? s : "";
  constexpr std::string_view kPrefix = "cpu_isa_";
  if (v.compare(0, kPrefix.size(), kPrefix) == 0) v.erase(0, kPrefix.size());
  return v;
}

std::string compute() {
  spec::HardwareClass c{build_arch(), aten_capability(), onednn_isa()};
  const std::string s = c.str();
  // A name outside the form (a future oneDNN ISA, say) is no class of this
  // protocol version: this process cannot train or replay bitwise.
  try {
    spec::parse_hardware_class(s);
  } catch (const Error &e) {
    fail(Status::kUnsupported,
         "hardware class: this process computes as '{}', which protocol version 2 cannot name: {}", s, e.what());
  }
  return s;
}

}  // namespace

const std::string &hardware_class() {
  static const std::string cls = compute();  // a throw leaves it to the next call
  return cls;
}

void check_hardware_class(const spec::ExecutionSpec &spec) {
  if (spec.reproducible()) return;  // the same bits on every class (PROTOCOL 14.6)
  const std::string &ours = hardware_class();
  if (spec.hardware_class != ours)
    fail(Status::kUnsupported,
         "spec: hardware_class '{}': this process computes as '{}' (ATen's CPU capability comes from "
         "ATEN_CPU_CAPABILITY or the CPU, oneDNN's ISA from ONEDNN_MAX_CPU_ISA or the CPU); a step computed on "
         "another class does not replay bit for bit here (docs/determinism.md): replay it where the class is the "
         "spec's, or compare in the norm-bucket mode",
         spec.hardware_class, ours);
}

}  // namespace pot::replay
