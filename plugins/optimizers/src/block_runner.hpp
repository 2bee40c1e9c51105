// BlockRunner: runs a per-block function over the optimizer's work blocks on a few threads.
//
// Blocks are split into contiguous ranges, one per thread, fork-join per call (no pool, no
// spinning threads left behind to compete with the backend). Each block is processed by exactly
// one thread and writes only its own outputs, so results never depend on the thread count.
// Small jobs run on the calling thread: a thread start costs more than they do.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace loom_optim {

class BlockRunner {
 public:
  /// `threads` = 0: one per hardware thread.
  explicit BlockRunner(unsigned threads = 1)
      : threads_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())) {}

  unsigned threads() const { return threads_; }

  /// Calls `fn(block)` for every block in [0, num_blocks); `elements` (the job's size) decides
  /// whether threads are worth starting.
  template <typename Fn>
  void run(size_t num_blocks, size_t elements, const Fn& fn) const {
    constexpr size_t kMinElementsPerThread = size_t{1} << 18;
    size_t workers = std::min<size_t>(threads_, num_blocks);
    workers = std::min(workers, std::max<size_t>(1, elements / kMinElementsPerThread));
    if (workers <= 1) {
      for (size_t b = 0; b < num_blocks; ++b) fn(b);
      return;
    }
    auto range = [&](size_t worker) {
      const size_t first = num_blocks * worker / workers, last = num_blocks * (worker + 1) / workers;
      for (size_t b = first; b < last; ++b) fn(b);
    };
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    try {
      for (size_t w = 1; w < workers; ++w) pool.emplace_back(range, w);
    } catch (...) {
      for (auto& t : pool) t.join();
      throw;
    }
    range(0);
    for (auto& t : pool) t.join();
  }

 private:
  unsigned threads_;
};

}  // namespace loom_optim
