// Caching device allocator: cudaMalloc is slow and synchronising, so freed blocks are kept in
// free lists and handed out again.
//
// Size classes: requests are rounded up to 512 B, then to the next of four steps per power of two
// (2^k, 1.25·2^k, 1.5·2^k, 1.75·2^k), the step never coarser than 2 MiB. Small blocks — the many
// per-step scratch areas and temporaries — share a class with requests of nearby sizes, and waste
// at most 25 %. From 8 MiB up the step is 2 MiB: a large block costs its size rounded up to the
// granularity at which cudaMalloc maps large allocations anyway, not up to a quarter more. Loom's
// large buffers (the activation arena, the flat parameter, gradient and optimizer-state buffers)
// are allocated once per run, so a coarse class bought them no reuse and cost up to 25 % more
// device memory (docs/decisions/large-blocks-at-their-size.md).
//
// Reuse: a small block is handed out again only for its exact class. A large request takes the
// smallest cached block of its stream that is at least its class and at most a quarter larger
// (the most a class ever wasted), so requests of nearby large sizes still reuse each other's
// blocks: a block already held from the driver costs no new device memory.
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

#include <algorithm>
#include <bit>
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
  /// Every size class is a multiple of this.
  static constexpr size_t kMinimumBlock = 512;
  /// The coarsest step between size classes: 2 MiB, the granularity at which the driver maps large
  /// allocations (the allocation granularity it reports for device memory), so rounding to it
  /// costs no device memory that cudaMalloc would not take anyway.
  static constexpr size_t kLargeStep = size_t{2} << 20;
  /// Classes from here up are 2 MiB apart (the octave whose quarter step is kLargeStep) and
  /// large: reused by best fit, not only for their exact class.
  static constexpr size_t kLargeBlock = 4 * kLargeStep;
  /// The largest request served: rounding anything larger could overflow size_t.
  static constexpr size_t kMaximumRequest = size_t{1} << 62;

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

  /// The size class a request of `bytes` (at most kMaximumRequest) is served from: the one rule
  /// the allocator, the backend's grow-only areas and the documented memory figures round by.
  static constexpr size_t size_class(size_t bytes) {
    const size_t rounded = (bytes + kMinimumBlock - 1) / kMinimumBlock * kMinimumBlock;
    if (rounded <= 4 * kMinimumBlock) return rounded;  // 512, 1024, 1536, 2048: exact multiples
    // Four classes per octave: step = 2^(k-2) where 2^k ≤ rounded < 2^(k+1), at most kLargeStep.
    const size_t step = std::min(std::bit_floor(rounded) / 4, kLargeStep);
    return (rounded + step - 1) / step * step;
  }
  /// Whether a cached free block of `block_bytes` may serve a request of size class `size`: its
  /// own class always; a large class also any block up to a quarter larger.
  static constexpr bool serves(size_t block_bytes, size_t size) {
    if (block_bytes == size) return true;
    return size >= kLargeBlock && block_bytes > size && block_bytes - size <= size / 4;
  }

  /// Bytes in blocks handed out and not yet returned (the blocks' sizes, not the requests).
  size_t allocated_bytes() const;
  /// The largest allocated_bytes() ever reached.
  size_t peak_allocated_bytes() const;
  /// Bytes held from the driver: allocated plus cached free blocks.
  size_t reserved_bytes() const;
  /// The bytes requested and allocated (blocks' sizes), live and at their peaks, and reserved.
  loom::MemoryUsageBytes usage() const;
  /// Number of cudaMalloc calls so far (cache misses): constant once a training step is warm.
  uint64_t device_mallocs() const;
  /// Blocks freed after a use on another stream whose event has not been seen complete yet.
  size_t pending_blocks() const;

 private:
  struct Block {
    size_t size = 0;                // the block's size: the size class it was allocated for
    cudaStream_t stream = nullptr;  // the stream it was allocated for
    size_t requested = 0;           // the bytes asked for (≤ size)
  };
  struct Pending {
    void* data = nullptr;
    Block block;
    cudaEvent_t event = nullptr;  // recorded on the stream of the block's last use
  };
  using FreeKey = std::pair<cudaStream_t, size_t>;  // (stream, block size), ordered for best fit

  /// Moves pending blocks whose event has completed to their free lists; with `wait`, waits
  /// for every event first. Throws LOOM_E_DEVICE if an event reports a device fault.
  void collect_pending_locked(bool wait);
  void empty_cache_locked();
  /// A cached free block of `stream` that serves a request of class `size`, taken out of its
  /// list (the smallest that does), or nullptr.
  void* take_free_locked(cudaStream_t stream, size_t size, size_t* block_bytes);
  cudaEvent_t take_event_locked();

  mutable std::mutex mutex_;
  cudaStream_t default_stream_ = nullptr;
  std::map<FreeKey, std::vector<void*>> free_blocks_;  // (stream, size) → free blocks; never empty lists
  std::unordered_map<void*, Block> live_blocks_;       // handed out
  std::vector<Pending> pending_;                       // freed, last use on another stream in flight
  std::vector<cudaEvent_t> spare_events_;              // recycled from completed pending blocks
  size_t allocated_ = 0, peak_ = 0, reserved_ = 0;
  size_t requested_ = 0, peak_requested_ = 0;  // the same in requested bytes
  uint64_t mallocs_ = 0;
};

}  // namespace loom_cuda
