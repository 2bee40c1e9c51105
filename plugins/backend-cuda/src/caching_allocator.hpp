// Caching device allocator: cudaMalloc is slow and synchronising, so freed blocks are kept in
// size-class free lists and handed out again.
//
// Size classes: requests are rounded up to 512 B, then to the next of four steps per power of two
// (2^k, 1.25·2^k, 1.5·2^k, 1.75·2^k), which bounds the waste at 25 % while letting activations of
// nearby sizes share blocks. A block is reused only for its exact class. Every op of the backend
// runs on one stream, so a block freed by the host after enqueuing its last use can be reused by
// any later op on that stream without an event: stream order serialises the two uses.
//
// Out of memory: the cache is returned to the driver (cudaFree of every free block) and the
// cudaMalloc retried once; if it fails again the error names the request and cudaMemGetInfo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

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

  /// A block of at least `bytes` (nullptr for 0). Throws loom::Error LOOM_E_OUT_OF_MEMORY.
  void* allocate(size_t bytes);
  /// Returns a block from allocate() to its free list; nullptr is ignored; an unknown pointer throws.
  void deallocate(void* data);
  /// cudaFree of every cached free block.
  void empty_cache();

  /// The size class a request of `bytes` is served from.
  static size_t size_class(size_t bytes);

  /// Bytes in blocks handed out and not yet returned (size classes, not requests).
  size_t allocated_bytes() const;
  /// The largest allocated_bytes() ever reached.
  size_t peak_allocated_bytes() const;
  /// Bytes held from the driver: allocated plus cached free blocks.
  size_t reserved_bytes() const;
  /// Number of cudaMalloc calls so far (cache misses): constant once a training step is warm.
  uint64_t device_mallocs() const;

 private:
  void empty_cache_locked();

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // size class → free blocks
  std::unordered_map<void*, size_t> live_blocks_;               // block → its size class
  size_t allocated_ = 0, peak_ = 0, reserved_ = 0;
  uint64_t mallocs_ = 0;
};

}  // namespace loom_cuda
