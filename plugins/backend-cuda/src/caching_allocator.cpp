// CachingAllocator: free lists per size class over cudaMalloc (see caching_allocator.hpp).
#include "caching_allocator.hpp"

#include <cuda_runtime.h>

#include <bit>
#include <string>

#include "loom/sdk/error.hpp"

namespace loom_cuda {

namespace {
constexpr size_t kMinimumBlock = 512;

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
  empty_cache_locked();
  for (auto& [block, size] : live_blocks_) (void)cudaFree(block);  // leaked by the caller; give it back
  live_blocks_.clear();
}

size_t CachingAllocator::size_class(size_t bytes) {
  size_t rounded = (bytes + kMinimumBlock - 1) / kMinimumBlock * kMinimumBlock;
  if (rounded <= 4 * kMinimumBlock) return rounded;  // 512, 1024, 1536, 2048: exact multiples
  // Four classes per octave: step = 2^(k-2) where 2^k ≤ rounded < 2^(k+1).
  const size_t top = std::bit_floor(rounded);
  const size_t step = top / 4;
  return (rounded + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* block = nullptr;
  auto found = free_blocks_.find(size);
  if (found != free_blocks_.end() && !found->second.empty()) {
    block = found->second.back();
    found->second.pop_back();
  } else {
    cudaError_t status = cudaMalloc(&block, size);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-free error before retrying
      empty_cache_locked();
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
  live_blocks_.emplace(block, size);
  allocated_ += size;
  if (allocated_ > peak_) peak_ = allocated_;
  return block;
}

void CachingAllocator::deallocate(void* data) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_blocks_.find(data);
  if (found == live_blocks_.end())
    throw loom::Error("backend/cuda: deallocate of a pointer this backend did not allocate");
  const size_t size = found->second;
  live_blocks_.erase(found);
  allocated_ -= size;
  free_blocks_[size].push_back(data);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() {
  // cudaFree waits for the device, so blocks still used by queued kernels are safe to release.
  for (auto& [size, blocks] : free_blocks_) {
    for (void* block : blocks) {
      (void)cudaFree(block);
      reserved_ -= size;
    }
    blocks.clear();
  }
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
uint64_t CachingAllocator::device_mallocs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mallocs_;
}

}  // namespace loom_cuda
