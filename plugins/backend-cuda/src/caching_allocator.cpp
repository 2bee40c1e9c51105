// CachingAllocator: free lists per stream and block size over cudaMalloc, best fit for large
// blocks, events for blocks last used on another stream (see caching_allocator.hpp).
#include "caching_allocator.hpp"

#include <cuda_runtime.h>

#include <string>

#include "loom/sdk/error.hpp"

namespace loom_cuda {

namespace {
std::string memory_info() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cudaMemGetInfo failed";
  }
  return std::to_string(free_bytes) + " of " + std::to_string(total_bytes) + " bytes free on the device";
}
}  // namespace

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    empty_cache_locked();
  } catch (const loom::Error&) {
    // A device fault reported by a pending event: the blocks are released below regardless.
  }
  for (Pending& pending : pending_) {
    (void)cudaFree(pending.data);
    (void)cudaEventDestroy(pending.event);
  }
  for (cudaEvent_t event : spare_events_) (void)cudaEventDestroy(event);
  for (auto& [block, info] : live_blocks_) (void)cudaFree(block);  // leaked by the caller; give it back
  live_blocks_.clear();
}

void* CachingAllocator::allocate(size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  if (bytes > kMaximumRequest)
    throw loom::Error("backend/cuda: out of device memory allocating " + std::to_string(bytes) +
                          " bytes: more than any device holds",
                      LOOM_E_OUT_OF_MEMORY);
  const size_t wanted = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_.empty()) collect_pending_locked(false);
  size_t size = wanted;  // the block's: more than the class when a cached large block is reused
  void* block = take_free_locked(stream, wanted, &size);
  if (block == nullptr) {
    cudaError_t status = cudaMalloc(&block, size);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-free error before retrying
      empty_cache_locked();      // waits for pending blocks, then gives every free one back
      status = cudaMalloc(&block, size);
    }
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      throw loom::Error("backend/cuda: out of device memory allocating " + std::to_string(bytes) +
                            " bytes (" + std::to_string(size) + " with rounding; " +
                            std::to_string(reserved_) + " bytes held by the backend; " + memory_info() +
                            "): " + cudaGetErrorString(status),
                        LOOM_E_OUT_OF_MEMORY);
    }
    ++mallocs_;
    reserved_ += size;
  }
  live_blocks_.emplace(block, Block{size, stream, bytes});
  allocated_ += size;
  if (allocated_ > peak_) peak_ = allocated_;
  requested_ += bytes;
  if (requested_ > peak_requested_) peak_requested_ = requested_;
  return block;
}

void CachingAllocator::deallocate(void* data, cudaStream_t last_use) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_blocks_.find(data);
  if (found == live_blocks_.end())
    throw loom::Error("backend/cuda: deallocate of a pointer this backend did not allocate");
  const Block block = found->second;
  if (last_use != block.stream) {
    // The block's own stream cannot see work enqueued on `last_use`: remember an event there and
    // reuse the block only once it has completed.
    cudaEvent_t event = take_event_locked();
    const cudaError_t recorded = cudaEventRecord(event, last_use);
    if (recorded != cudaSuccess) {
      spare_events_.push_back(event);
      (void)cudaGetLastError();
      throw loom::Error(
          std::string("backend/cuda: cudaEventRecord for a block freed after use on another stream: ") +
              cudaGetErrorString(recorded),
          LOOM_E_DEVICE);
    }
    pending_.push_back(Pending{data, block, event});
  } else {
    free_blocks_[{block.stream, block.size}].push_back(data);
  }
  live_blocks_.erase(found);
  allocated_ -= block.size;
  requested_ -= block.requested;
}

void* CachingAllocator::take_free_locked(cudaStream_t stream, size_t size, size_t* block_bytes) {
  // The lists are ordered by (stream, size) and none is empty, so the first at or after
  // (stream, size) is the smallest cached block of this stream that is large enough.
  auto found = free_blocks_.lower_bound({stream, size});
  if (found == free_blocks_.end() || found->first.first != stream || !serves(found->first.second, size))
    return nullptr;
  void* block = found->second.back();
  *block_bytes = found->first.second;
  found->second.pop_back();
  if (found->second.empty()) free_blocks_.erase(found);
  return block;
}

cudaEvent_t CachingAllocator::take_event_locked() {
  if (!spare_events_.empty()) {
    cudaEvent_t event = spare_events_.back();
    spare_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw loom::Error(std::string("backend/cuda: cudaEventCreate: ") + cudaGetErrorString(status),
                      LOOM_E_DEVICE);
  }
  return event;
}

void CachingAllocator::collect_pending_locked(bool wait) {
  size_t kept = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Pending& pending = pending_[i];
    const cudaError_t status = wait ? cudaEventSynchronize(pending.event) : cudaEventQuery(pending.event);
    if (status == cudaErrorNotReady) {
      pending_[kept++] = pending;
      continue;
    }
    if (status != cudaSuccess) {
      for (size_t j = i; j < pending_.size(); ++j) pending_[kept++] = pending_[j];
      pending_.resize(kept);
      throw loom::Error(std::string("backend/cuda: waiting for a block's last use on another stream: ") +
                            cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")",
                        LOOM_E_DEVICE);
    }
    free_blocks_[{pending.block.stream, pending.block.size}].push_back(pending.data);
    spare_events_.push_back(pending.event);
  }
  pending_.resize(kept);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() {
  collect_pending_locked(true);
  // cudaFree waits for the device, so blocks still used by queued kernels are safe to release.
  for (auto& [key, blocks] : free_blocks_) {
    for (void* block : blocks) {
      (void)cudaFree(block);
      reserved_ -= key.second;
    }
  }
  free_blocks_.clear();
}

size_t CachingAllocator::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}
size_t CachingAllocator::peak_allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}
size_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}
loom::MemoryUsageBytes CachingAllocator::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {requested_, peak_requested_, allocated_, peak_, reserved_};
}
uint64_t CachingAllocator::device_mallocs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mallocs_;
}
size_t CachingAllocator::pending_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

}  // namespace loom_cuda
