// parallel_for: runs fn(i) for i in [0, n) on up to `threads` threads (the
// caller's included). Items are taken in order from a shared counter, so the
// split adapts to uneven items. The first exception thrown by any item is
// rethrown on the caller after all threads stop.
#pragma once

#include <cstddef>
#include <functional>

namespace pot::hash {

// Number of threads a request of 0 ("all cores") resolves to (>= 1).
unsigned resolve_threads(unsigned requested) noexcept;

void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)> &fn);

}  // namespace pot::hash
