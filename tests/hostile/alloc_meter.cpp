// Replacements of the global allocation functions that count bytes. They
// allocate with malloc and measure with malloc_usable_size, so every
// replaced operator delete (sized or not) frees what any operator new gave,
// and the sanitizers see matching malloc/free pairs. The aligned forms are
// not replaced (libpot does not use over-aligned types).
#include "alloc_meter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> g_current{0}, g_peak{0};

void *counted_alloc(size_t n) {
  void *p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) return nullptr;
  const size_t now = g_current.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  size_t seen = g_peak.load(std::memory_order_relaxed);
  while (now > seen && !g_peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  return p;
}

void counted_free(void *p) noexcept {
  if (p == nullptr) return;
  g_current.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

void *alloc_or_throw(size_t n) {
  void *p = counted_alloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace pot::test::meter {
size_t current() { return g_current.load(); }
size_t peak() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }
}  // namespace pot::test::meter

void *operator new(size_t n) { return alloc_or_throw(n); }
void *operator new[](size_t n) { return alloc_or_throw(n); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { return counted_alloc(n); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return counted_alloc(n); }
void operator delete(void *p) noexcept { counted_free(p); }
void operator delete[](void *p) noexcept { counted_free(p); }
void operator delete(void *p, size_t) noexcept { counted_free(p); }
void operator delete[](void *p, size_t) noexcept { counted_free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { counted_free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { counted_free(p); }
