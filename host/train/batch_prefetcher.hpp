// BatchPrefetcher: a run's training batches read ahead by a thread of their own, so that reading
// a shard, masking and unpacking the next batches overlaps the step computing on the current one.
//
// - Same batches, same order. Only the thread calls the dataset, and it calls `next_batch` exactly
//   as the step would have, one batch after another; `take()` hands them on in that order. A run
//   therefore trains on the batches it trained on without read-ahead, bit for bit.
// - The cursor of what was trained on. The dataset's own cursor runs up to `depth` batches ahead;
//   `cursor()` is the position after the last batch taken — what a checkpoint saves, so a resumed
//   run continues with the batch the interrupted one would have taken next.
// - Errors where they happened. An exception from the dataset is kept with the batch it was
//   reading and rethrown, type and message unchanged, by the `take()` that would have returned
//   that batch; the thread reads nothing after it. An error in a batch never taken (read ahead
//   past the run's last step) is never reported, as without read-ahead.
// - One caller at a time. While the prefetcher lives the dataset belongs to its thread. `hold()`
//   waits for the batch being read and pauses reading until the hold ends: anything else that
//   reads data meanwhile (evaluation, whose dataset may share a library that is not thread-safe,
//   such as HDF5) runs under a hold.
// - Shutdown. The destructor stops the thread once the batch it is reading is done and joins it,
//   whether the run ended, threw, or was stopped by a signal (the thread inherits the blocked
//   SIGINT/SIGTERM of the thread that made it, so signals keep going to the stop-request thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "loom/sdk/dataset.hpp"
#include "model/host_batch_buffers.hpp"
#include "plugin_loading/component.hpp"

namespace loom::host {

/// One batch as `take()` hands it on; valid until the next `take()`.
struct PrefetchedBatch {
  HostBatch batch;
  loom::BatchShape shape{};
  const std::vector<uint64_t>* instance_ids = nullptr;  ///< the rows' instances (instance trace)
};

class BatchPrefetcher {
 public:
  /// Batches read ahead, at most; a third buffer holds the batch the step is working on.
  static constexpr size_t kDefaultDepth = 2;

  /// Starts reading `data` (opened, and sought where a run resumes) into buffers for `limits`.
  BatchPrefetcher(const Component<loom::Dataset>& data, const loom::BatchLimits& limits,
                  size_t depth = kDefaultDepth);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  /// The next batch, waiting for it when it is not read yet; rethrows the dataset's error for it.
  PrefetchedBatch take();
  /// The dataset's position after the last batch taken (before any: where it was at construction).
  loom::DatasetCursor cursor() const;

  /// Reading paused for the hold's lifetime, the batch in progress finished first.
  class Hold {
   public:
    explicit Hold(BatchPrefetcher* owner) : owner_(owner) {}
    Hold(Hold&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Hold& operator=(Hold&&) = delete;
    ~Hold();

   private:
    BatchPrefetcher* owner_;
  };
  [[nodiscard]] Hold hold();

 private:
  struct Slot {
    explicit Slot(const loom::BatchLimits& limits) : buffers(limits) {}
    HostBatchBuffers buffers;
    HostBatch batch;
    loom::BatchShape shape{};
    loom::DatasetCursor after{};  // the dataset's cursor after this batch
    std::exception_ptr error;
  };

  void read_ahead();
  // Slots the thread may not write: read and not yet taken, plus the one the caller holds.
  size_t slots_in_use() const { return static_cast<size_t>(read_ - taken_) + (taken_ > 0 ? 1 : 0); }

  const Component<loom::Dataset>& data_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t read_ = 0, taken_ = 0;  // batches read by the thread, taken by the caller
  loom::DatasetCursor cursor_{};   // after the last batch taken
  size_t holds_ = 0;
  bool reading_ = false;  // the thread is inside the dataset
  bool failed_ = false;   // the dataset threw: nothing more is read
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace loom::host
