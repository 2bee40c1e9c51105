// The caching allocator: size classes (no GPU needed), reuse without new cudaMalloc once warm,
// the bytes requested and allocated it reports, and blocks last used on a second stream reused
// only after that use has completed.
#include "caching_allocator.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

/// Holds back everything enqueued on `stream` after it until open() (a host function that waits),
/// so a test decides when a use on that stream completes. Opens itself on destruction.
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) {
    EXPECT_EQ(cudaLaunchHostFunc(stream, &StreamGate::wait, this), cudaSuccess);
  }
  ~StreamGate() { open(); }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  static void CUDART_CB wait(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    std::unique_lock<std::mutex> lock(gate->mutex_);
    gate->opened_.wait_for(lock, std::chrono::seconds(10), [gate] { return gate->open_; });
  }
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

/// Two non-blocking streams on device 0, destroyed at the end of the test.
struct TwoStreams {
  TwoStreams() {
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&home, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  }
  ~TwoStreams() {
    (void)cudaStreamSynchronize(other);
    (void)cudaStreamDestroy(home);
    (void)cudaStreamDestroy(other);
  }
  cudaStream_t home = nullptr, other = nullptr;
};

TEST(CachingAllocatorSizeClass, RoundsUpToClassesWithBoundedWaste) {
  using loom_cuda::CachingAllocator;
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(2049), 2560u);
  EXPECT_EQ(CachingAllocator::size_class(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::size_class((size_t{1} << 20) + 1), (size_t{5} << 20) / 4);
  for (size_t bytes = 1; bytes < (size_t{1} << 26); bytes = bytes * 3 + 7) {
    const size_t size = CachingAllocator::size_class(bytes);
    EXPECT_GE(size, bytes);
    EXPECT_EQ(size % 512, 0u) << bytes;
    EXPECT_LE(static_cast<double>(size), 1.25 * static_cast<double>(bytes) + 512.0) << bytes;
  }
}

TEST(CachingAllocator, ReusesFreedBlocksWithoutNewDeviceMallocs) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CudaBackend gpu(0, false);
  const size_t sizes[] = {100, 4096, 1 << 20, (1 << 20) + 3, 37 * 768 * 4};
  // Warm-up: one "step" of allocations and frees.
  for (int step = 0; step < 3; ++step) {
    std::vector<void*> blocks;
    for (size_t bytes : sizes) {
      void* block = gpu.allocate(bytes);
      ASSERT_NE(block, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 256, 0u) << "256-byte alignment";
      blocks.push_back(block);
    }
    const uint64_t after_first = gpu.device_mallocs();
    for (void* block : blocks) gpu.deallocate(block);
    if (step > 0) {
      EXPECT_EQ(gpu.device_mallocs(), after_first) << "step " << step << " missed the cache";
    }
  }
  const uint64_t warm = gpu.device_mallocs();
  for (int step = 0; step < 5; ++step) {
    std::vector<void*> blocks;
    for (size_t bytes : sizes) blocks.push_back(gpu.allocate(bytes));
    for (void* block : blocks) gpu.deallocate(block);
  }
  EXPECT_EQ(gpu.device_mallocs(), warm);
  EXPECT_GE(gpu.peak_allocated_bytes(), size_t{1} << 21);
  EXPECT_EQ(gpu.allocate(0), nullptr);
  gpu.deallocate(nullptr);
}

TEST(CachingAllocator, ReportsRequestedAndAllocatedBytesLiveAndAtThePeak) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CachingAllocator allocator;
  const size_t small = 1000, large = (size_t{1} << 20) + 1;
  void* a = allocator.allocate(small);
  void* b = allocator.allocate(large);
  loom::MemoryUsageBytes u = allocator.usage();
  EXPECT_EQ(u.requested, small + large);
  using loom_cuda::CachingAllocator;
  EXPECT_EQ(u.allocated, CachingAllocator::size_class(small) + CachingAllocator::size_class(large));
  EXPECT_EQ(u.peak_requested, u.requested);
  EXPECT_EQ(u.peak_allocated, u.allocated);
  EXPECT_GE(u.reserved, u.allocated);
  allocator.deallocate(b);
  u = allocator.usage();
  EXPECT_EQ(u.requested, small);
  EXPECT_EQ(u.allocated, CachingAllocator::size_class(small));
  EXPECT_EQ(u.peak_requested, small + large) << "the peak stays";
  EXPECT_GE(u.reserved, u.allocated + CachingAllocator::size_class(large)) << "the freed block is cached";
  allocator.deallocate(a);
  EXPECT_EQ(allocator.usage().requested, 0u);
}

TEST(CachingAllocator, BlockLastUsedOnAnotherStreamWaitsForThatUse) {
  LOOM_SKIP_WITHOUT_CUDA();
  TwoStreams streams;
  const size_t bytes = size_t{1} << 20;
  loom_cuda::CachingAllocator allocator;
  allocator.set_default_stream(streams.home);
  void* block = allocator.allocate(bytes);
  ASSERT_NE(block, nullptr);
  {
    StreamGate gate(streams.other);
    // The block's last use, on the other stream, stays queued behind the gate.
    ASSERT_EQ(cudaMemsetAsync(block, 0, bytes, streams.other), cudaSuccess);
    allocator.deallocate(block, streams.other);
    EXPECT_EQ(allocator.pending_blocks(), 1u);
    const uint64_t mallocs = allocator.device_mallocs();
    void* meanwhile = allocator.allocate(bytes);
    EXPECT_NE(meanwhile, block) << "handed out again while its last use on another stream was still queued";
    EXPECT_EQ(allocator.device_mallocs(), mallocs + 1);
    EXPECT_EQ(allocator.pending_blocks(), 1u);
    gate.open();
    ASSERT_EQ(cudaStreamSynchronize(streams.other), cudaSuccess);
    // The event has completed: the block is back, without a new cudaMalloc.
    void* after = allocator.allocate(bytes);
    EXPECT_EQ(after, block) << "not reused once its last use had completed";
    EXPECT_EQ(allocator.device_mallocs(), mallocs + 1);
    EXPECT_EQ(allocator.pending_blocks(), 0u);
    allocator.deallocate(meanwhile);
    allocator.deallocate(after);  // freed on its own stream: no event
    EXPECT_EQ(allocator.pending_blocks(), 0u);
  }
  // A block is handed out only for the stream it was allocated for: the other stream could run
  // ahead of the home stream's last use.
  void* on_other = allocator.allocate(bytes, streams.other);
  EXPECT_NE(on_other, block);
  EXPECT_EQ(allocator.allocate(bytes), block) << "the home stream's free block";
  allocator.deallocate(on_other, streams.other);
  allocator.deallocate(block);
  EXPECT_EQ(allocator.pending_blocks(), 0u);
  EXPECT_EQ(allocator.allocated_bytes(), 0u);
}

TEST(CachingAllocator, EmptyCacheWaitsForBlocksInFlightOnAnotherStream) {
  LOOM_SKIP_WITHOUT_CUDA();
  TwoStreams streams;
  loom_cuda::CachingAllocator allocator;
  allocator.set_default_stream(streams.home);
  void* block = allocator.allocate(4096);
  const size_t reserved = allocator.reserved_bytes();
  ASSERT_EQ(cudaMemsetAsync(block, 1, 4096, streams.other), cudaSuccess);
  allocator.deallocate(block, streams.other);
  allocator.empty_cache();
  EXPECT_EQ(allocator.pending_blocks(), 0u);
  EXPECT_EQ(allocator.reserved_bytes(), reserved - loom_cuda::CachingAllocator::size_class(4096));
}

TEST(CachingAllocator, ReportsOutOfMemoryAsLoomError) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CudaBackend gpu(0, false);
  try {
    (void)gpu.allocate(size_t{1} << 50);  // 1 PiB
    FAIL() << "allocate(1 PiB) succeeded";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.status(), LOOM_E_OUT_OF_MEMORY);
    EXPECT_NE(std::string(e.what()).find("1125899906842624"), std::string::npos) << e.what();
  }
}

TEST(CudaBackendConstruction, DeviceAndThreads) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CudaBackend gpu(0, true);
  EXPECT_EQ(gpu.device().type, loom::DeviceType::cuda);
  EXPECT_EQ(gpu.device().index, 0);
  EXPECT_EQ(gpu.threads(), 1);
  EXPECT_TRUE(gpu.tf32());
  EXPECT_TRUE(gpu.fused_attention(64, 512));
  EXPECT_FALSE(gpu.fused_attention(256, 512));
}

TEST(CudaBackendConstruction, NoDeviceIsAnUnsupportedError) {
  if (no_cuda_device_reason().empty())
    GTEST_SKIP() << "a CUDA device is present: this test covers machines without one";
  try {
    loom_cuda::CudaBackend gpu(0, false);
    FAIL() << "constructed without a device";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.status(), LOOM_E_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("backend/cuda: no CUDA device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom_cuda_test
