// pot-repro/1 inside LibTorch (docs/PROTOCOL.md 14.6): the arithmetic's
// kernels registered into ATen's CPU dispatch key, and the gate that says,
// per thread, whether ATen computes in it.
//
// ATen keeps one kernel per operator and dispatch key for the whole
// process, so registering is process-wide: install() replaces the CPU
// kernels of the arithmetic's operators once, on the first step that needs
// it. Each replacement computes pot-repro/1 only on a thread inside a Scope
// and otherwise calls ATen's own CPU kernel (its at::cpu:: entry point), so
// a process keeps training and replaying `native` steps on its other
// threads, bit for bit as before.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace pot::repro_aten {

// Registers the kernels (idempotent, thread-safe). kBackend when LibTorch
// refuses a registration.
void install();

// Whether the calling thread computes in pot-repro/1.
bool active();

// The operators (name.overload) that have a pot-repro/1 kernel, sorted.
std::vector<std::string> kernel_operators();

// Computes the calling thread's ATen operators in pot-repro/1 while it
// lives, and watches every operator dispatched on the thread: one that
// computes on floating-point values without a pot-repro/1 kernel (an ATen
// CPU kernel of its own, not a view, copy or composite of others), or a
// kernel's operator on a dtype the arithmetic does not define, is a
// violation. The operator still runs (ATen gives no way to stop it from an
// observer), so whatever the step computed is void: check() refuses it.
// Scopes nest on a thread; the thread that made one must end it. While
// the outermost lives, LibTorch's process-wide oneDNN switch is off, so
// composites that would pick a fused oneDNN kernel (torch 2's CPU LSTM)
// run through the arithmetic's operators; the switch is restored after.
class Scope {
 public:
  Scope();
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

  // kUnsupported naming every violation on the thread since its outermost
  // scope began, e.g. "aten::tanh.default has no pot-repro/1 kernel".
  void check() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Records a violation on this thread's scopes (once per distinct text):
// called by the kernels for a dtype or order they do not define.
void note_violation(const std::string &what);

}  // namespace pot::repro_aten
