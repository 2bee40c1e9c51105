// backend/cuda's op timer (OpProfiler, loom/sdk/ops/op_profiler.hpp): a pair of CUDA events
// recorded on the backend's stream around each outermost op (loom_backend/op_timing.hpp), so an
// op's time is the device time from its first kernel's start to its last kernel's end, and no
// op waits for the device. Events come from a pool that grows to the most pairs pending at once
// (two per op of a step) and is reused; take() waits for the last event recorded — after the
// step's synchronize() that costs nothing — and sums the elapsed time of every pair into the
// totals. Pairs pending past kMaxPendingOps are summed early (a wait), so a process that profiles
// and never takes holds a bounded pool.
//
// The backend's device must be current when begin() and end() run (checks() binds it first).
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "cuda_check.hpp"
#include "loom_backend/op_timing.hpp"

namespace loom_cuda {

class CudaEventOpTimer final : public loom_backend::OpTimer {
 public:
  static constexpr size_t kMaxPendingOps = 16384;

  explicit CudaEventOpTimer(cudaStream_t stream) : stream_(stream) {}
  ~CudaEventOpTimer() override {
    for (cudaEvent_t event : events_) (void)cudaEventDestroy(event);
  }
  CudaEventOpTimer(const CudaEventOpTimer&) = delete;
  CudaEventOpTimer& operator=(const CudaEventOpTimer&) = delete;

  size_t take(loom::OpFamilyTime* totals, size_t count) override {
    collect();
    return totals_.take(totals, count);
  }
  /// Events in the pool (two per op pending at once, at most).
  size_t pooled_events() const { return events_.size(); }

 protected:
  void begin(loom::OpFamily family) override {
    if (pending_.size() >= kMaxPendingOps) collect();
    const size_t first = 2 * pending_.size();
    while (events_.size() < first + 2) {
      cudaEvent_t event = nullptr;
      cuda_check(cudaEventCreate(&event), "OpProfiler: cudaEventCreate");
      events_.push_back(event);
    }
    cuda_check(cudaEventRecord(events_[first], stream_), "OpProfiler: cudaEventRecord");
    pending_.push_back(Pending{family, false});
  }
  void end() noexcept override {
    if (pending_.empty()) return;
    // A failed record leaves the pair out of the totals; the stream's fault surfaces at the next
    // op or wait, where it is reported. The record's own error is cleared, so that the next op's
    // launch check does not report it under that op's name.
    const cudaError_t recorded = cudaEventRecord(events_[2 * pending_.size() - 1], stream_);
    if (recorded != cudaSuccess) (void)cudaGetLastError();
    pending_.back().ended = recorded == cudaSuccess;
  }

 private:
  struct Pending {
    loom::OpFamily family;
    bool ended;
  };

  /// Waits for the last pair's end and adds every pending pair's elapsed time to the totals.
  void collect() {
    for (size_t i = pending_.size(); i-- > 0;)
      if (pending_[i].ended) {
        cuda_check(cudaEventSynchronize(events_[2 * i + 1]), "OpProfiler: cudaEventSynchronize");
        break;
      }
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (!pending_[i].ended) continue;
      float milliseconds = 0;
      cuda_check(cudaEventElapsedTime(&milliseconds, events_[2 * i], events_[2 * i + 1]),
                 "OpProfiler: cudaEventElapsedTime");
      totals_.add(pending_[i].family, milliseconds);
    }
    pending_.clear();
  }

  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;  // pair i: events_[2i] (begin), events_[2i + 1] (end)
  std::vector<Pending> pending_;
  loom_backend::OpTotals totals_;
};

}  // namespace loom_cuda
