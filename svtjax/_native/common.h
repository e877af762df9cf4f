// What svtjax's compiled kernels share: the standard and XLA FFI headers, the vector-clone
// attribute and the thread-pool loop. Each kernel file (fisher_yates.cc, first_tops.cc, exact.cc)
// defines its handlers; module.cc makes them a Python module (svtjax._native._kernels).

#ifndef SVTJAX_NATIVE_COMMON_H_
#define SVTJAX_NATIVE_COMMON_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

namespace svtjax {

namespace ffi = xla::ffi;

// Clones of a function for AVX-512 and AVX2, picked when the library loads (an ifunc: ELF
// targets with GNU-style attributes); elsewhere one baseline build.
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
#define SVTJAX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SVTJAX_VECTOR_CLONES
#endif

// Runs work(0) .. work(tasks - 1), each once, on the calling thread and on up to `helpers` tasks
// of XLA's intra-op thread pool, and returns when all have finished. The calling thread takes
// tasks too, so the call completes even when the pool never runs a helper (a busy or absent
// pool: Schedule then runs it inline); a helper that starts late finds no task left and touches
// nothing but the shared counters, which it co-owns.
template <typename F>
void ParallelFor(ffi::ThreadPool* pool, int64_t helpers, int64_t tasks, const F& work) {
  struct Shared {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> finished{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>();
  const F* fn = &work;
  auto drain = [shared, fn, tasks]() {
    for (int64_t t; (t = shared->next.fetch_add(1)) < tasks;) {
      (*fn)(t);
      if (shared->finished.fetch_add(1) + 1 == tasks) {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->cv.notify_all();
      }
    }
  };
  for (int64_t h = 0; pool != nullptr && h < helpers && h + 1 < tasks; ++h) {
    auto helper = drain;
    pool->Schedule(std::move(helper));
  }
  drain();
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->finished.load() == tasks; });
}

// Swaps at least this many positions per task before a block is split among threads.

}  // namespace svtjax

#endif  // SVTJAX_NATIVE_COMMON_H_
