#include "hash/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pot::hash {

unsigned resolve_threads(unsigned requested) noexcept {
  if (requested) return requested;
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)> &fn) {
  const size_t workers = std::min<size_t>(resolve_threads(threads), n);
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr first;
  std::mutex mu;
  auto work = [&] {
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) return;
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        stop = true;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  try {
    for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  } catch (...) {
    stop = true;
    for (auto &th : pool) th.join();
    throw;
  }
  work();
  for (auto &th : pool) th.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace pot::hash
