// Caching device allocator: cudaMalloc is slow and synchronising, so freed blocks are kept in
// size-class free lists and handed out again.
//
// Size classes: requests are rounded up to 512 B, then to the next of four steps per power of two
// (2^k, 1.25·2^k, 1.5·2^k, 1.75·2^k), which bounds the waste at 25 % while letting activations of
// nearby sizes share blocks. A block is reused only for its exact class.
//
// Streams: every block belongs to the stream it was allocated for, and is handed out again only
// for that stream. A block freed after its last use was enqueued on its own stream is reusable at
// once: stream order serialises the old use and the new one. A block whose last use was enqueued
// on another stream (a copy or communication stream) gets an event recorded on that stream at
// deallocate(); it waits in a pending list and returns to its free list only once the event has
// completed (queried, never waited for, at each allocate; waited for before the cache is emptied).
//
// Out of memory: the cache is returned to the driver (cudaFree of every free block) and the
// cudaMalloc retried once; if it fails again the error names the request and cudaMemGetInfo.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/sdk/ops/memory_usage.hpp"

namespace loom_cuda {

class CachingAllocator {
 public:
  /// Every block is aligned to this many bytes (cudaMalloc gives ≥ 256).
  static constexpr size_t kAlignment = 256;

  CachingAllocator() = default;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  /// Frees every block (the caller synchronises the device first).
  ~CachingAllocator();

  /// The stream allocate(bytes) and deallocate(data) mean (the backend's; the legacy default
  /// stream until set). Set once, before the first allocation.
  void set_default_stream(cudaStream_t stream) { default_stream_ = stream; }

  /// A block of at least `bytes` (nullptr for 0) for work on `stream`. Throws loom::Error
  /// LOOM_E_OUT_OF_MEMORY.
  void* allocate(size_t bytes, cudaStream_t stream);
  void* allocate(size_t bytes) { return allocate(bytes, default_stream_); }
  /// Returns a block from allocate() once its last use, enqueued on `last_use`, is done: at once
  /// when `last_use` is the block's own stream, else after an event recorded on `last_use` now.
  /// nullptr is ignored; an unknown pointer throws.
  void deallocate(void* data, cudaStream_t last_use);
  void deallocate(void* data) { deallocate(data, default_stream_); }
  /// cudaFree of every cached free block (pending ones are waited for first).
  void empty_cache();

  /// The size class a request of `bytes` is served from.
  static size_t size_class(size_t bytes);

  /// Bytes in blocks handed out and not yet returned (size classes, not requests).
  size_t allocated_bytes() const;
  /// The largest allocated_bytes() ever reached.
  size_t peak_allocated_bytes() const;
  /// Bytes held from the driver: allocated plus cached free blocks.
  size_t reserved_bytes() const;
  /// The bytes requested and allocated (size classes), live and at their peaks, and reserved.
  loom::MemoryUsageBytes usage() const;
  /// Number of cudaMalloc calls so far (cache misses): constant once a training step is warm.
  uint64_t device_mallocs() const;
  /// Blocks freed after a use on another stream whose event has not been seen complete yet.
  size_t pending_blocks() const;

 private:
  struct Block {
    size_t size = 0;                // size class
    cudaStream_t stream = nullptr;  // the stream it was allocated for
    size_t requested = 0;           // the bytes asked for (≤ size)
  };
  struct Pending {
    void* data = nullptr;
    Block block;
    cudaEvent_t event = nullptr;  // recorded on the stream of the block's last use
  };
  using FreeKey = std::pair<cudaStream_t, size_t>;  // (stream, size class)

  /// Moves pending blocks whose event has completed to their free lists; with `wait`, waits
  /// for every event first. Throws LOOM_E_DEVICE if an event reports a device fault.
  void collect_pending_locked(bool wait);
  void empty_cache_locked();
  cudaEvent_t take_event_locked();

  mutable std::mutex mutex_;
  cudaStream_t default_stream_ = nullptr;
  std::map<FreeKey, std::vector<void*>> free_blocks_;  // (stream, size class) → free blocks
  std::unordered_map<void*, Block> live_blocks_;       // handed out
  std::vector<Pending> pending_;                       // freed, last use on another stream in flight
  std::vector<cudaEvent_t> spare_events_;              // recycled from completed pending blocks
  size_t allocated_ = 0, peak_ = 0, reserved_ = 0;
  size_t requested_ = 0, peak_requested_ = 0;  // the same in requested bytes
  uint64_t mallocs_ = 0;
};

}  // namespace loom_cuda
