// The caching allocator: size classes, which cached block serves which request, the documented
// memory figures and the refusal of impossible requests (no GPU needed); reuse without new
// cudaMalloc once warm, large blocks at their size and reused by nearby requests, the bytes
// requested and allocated it reports (from several threads too), the device's allocation
// granularity, and blocks last used on a second stream reused only after that use has completed.
#include "caching_allocator.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>

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

constexpr size_t kMiB = size_t{1} << 20;

TEST(CachingAllocatorSizeClass, LargeClassesAreTheRequestRoundedUpToTwoMiB) {
  using loom_cuda::CachingAllocator;
  static_assert(CachingAllocator::kLargeStep == 2 * kMiB);
  static_assert(CachingAllocator::kLargeBlock == 8 * kMiB);
  // The 8–16 MiB octave's quarter step is already 2 MiB; from 16 MiB up the step stays 2 MiB
  // where four classes per octave would be 4 MiB, 8 MiB, ... 8 GiB apart.
  EXPECT_EQ(CachingAllocator::size_class(8 * kMiB + 1), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::size_class(16 * kMiB + 1), 18 * kMiB);
  EXPECT_EQ(CachingAllocator::size_class((size_t{1} << 30) + 1), (size_t{1} << 30) + 2 * kMiB);
  // The bert-large seq 128 batch 256 activation arena with g saved (35.4 GB) takes 35.4 GB, not 40 GiB.
  EXPECT_EQ(CachingAllocator::size_class(35'416'221'888), 35'416'702'976u);
  for (size_t bytes = CachingAllocator::kLargeBlock - 1000; bytes <= CachingAllocator::kMaximumRequest;
       bytes = bytes / 2 * 3 + 12'345) {
    const size_t size = CachingAllocator::size_class(bytes);
    EXPECT_GE(size, bytes);
    EXPECT_EQ(size % CachingAllocator::kLargeStep, 0u) << bytes;
    EXPECT_LT(size - bytes, CachingAllocator::kLargeStep) << bytes;
  }
  EXPECT_EQ(CachingAllocator::size_class(CachingAllocator::kMaximumRequest), CachingAllocator::kMaximumRequest);
  EXPECT_EQ(CachingAllocator::size_class(CachingAllocator::kMaximumRequest - 1), CachingAllocator::kMaximumRequest);
}

TEST(CachingAllocatorSizeClass, BelowEightMiBFourClassesPerPowerOfTwo) {
  using loom_cuda::CachingAllocator;
  // The small blocks keep the classes they had: a class is a multiple of a quarter of its octave,
  // and the next class down is below the request, so nearby sizes share a block.
  for (size_t bytes = 2049; bytes < CachingAllocator::kLargeBlock; bytes = bytes * 5 / 4 + 77) {
    const size_t rounded = (bytes + 511) / 512 * 512;
    const size_t step = std::bit_floor(rounded) / 4;
    const size_t size = CachingAllocator::size_class(bytes);
    EXPECT_EQ(size % step, 0u) << bytes;
    EXPECT_GE(size, rounded) << bytes;
    EXPECT_LT(size - step, rounded) << bytes;
  }
}

TEST(CachingAllocatorSizeClass, CachedBlocksServeTheirClassAndLargeOnesNearbyRequests) {
  using loom_cuda::CachingAllocator;
  const size_t large = CachingAllocator::kLargeBlock;
  static_assert(CachingAllocator::serves(3072, 3072));
  EXPECT_FALSE(CachingAllocator::serves(4096, 3072)) << "small blocks: their class only";
  EXPECT_FALSE(CachingAllocator::serves(large - 512, large - 2048)) << "below the large classes";
  EXPECT_TRUE(CachingAllocator::serves(large, large));
  EXPECT_TRUE(CachingAllocator::serves(large + 2 * kMiB, large)) << "a quarter larger";
  EXPECT_FALSE(CachingAllocator::serves(large + 4 * kMiB, large)) << "more than a quarter larger";
  EXPECT_FALSE(CachingAllocator::serves(large, large + 2 * kMiB)) << "too small";
  EXPECT_TRUE(CachingAllocator::serves(80 * kMiB, 64 * kMiB));
  EXPECT_FALSE(CachingAllocator::serves(82 * kMiB, 64 * kMiB));
}

// The peaks docs/gpu.md gives for the three H200 workloads ("Device memory, by class": g
// recomputed in backward, block outputs in two buffers used in turn; docs/decisions/
// large-blocks-at-their-size.md has them before either),
// computed from the buffers Loom allocates in a bf16-mixed NVLAMB training step
// (`loom bench RECIPE --memory`: the activation arena, the 16-bit working copy, the f32 master,
// gradients and two moments, the staged batch, the loss sums and the non-finite flag) and
// cuBLASLt's 32 MiB workspace, each rounded to its size class. A change of the rule changes them.
TEST(CachingAllocatorSizeClass, BertPretrainingBuffersInTheirClasses) {
  using loom_cuda::CachingAllocator;
  struct Workload {
    const char* name;
    size_t arena, parameters16, flat32, batch, in_classes;
  };
  const Workload workloads[] = {
      {"bert-large seq 128 batch 256", 25'886'783'680, 672'452'256, 1'344'904'512, 831'488, 31'980'389'376},
      {"bert-base seq 128 batch 256", 11'093'735'616, 220'212'896, 440'425'792, 831'488, 13'120'701'440},
      {"bert-large seq 512 batch 32", 12'942'211'520, 672'452'256, 1'344'904'512, 414'208, 19'036'308'480},
  };
  for (const Workload& w : workloads) {
    const size_t buffers[] = {w.arena, w.parameters16, w.flat32, w.flat32, w.flat32, w.flat32,
                              w.batch, size_t{32} << 20, 12, 4};
    size_t requested = 0, in_classes = 0;
    for (size_t bytes : buffers) {
      requested += bytes;
      in_classes += CachingAllocator::size_class(bytes);
    }
    EXPECT_EQ(in_classes, w.in_classes) << w.name << ": " << requested << " requested";
    EXPECT_LT(in_classes - requested, 8 * CachingAllocator::kLargeStep) << w.name;
  }
}

TEST(CachingAllocatorSizeClass, RefusesARequestNoDeviceHoldsBeforeAskingTheDevice) {
  loom_cuda::CachingAllocator allocator;  // no CUDA call: runs without a GPU
  try {
    (void)allocator.allocate(std::numeric_limits<size_t>::max());
    FAIL() << "allocate(SIZE_MAX) succeeded";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.status(), LOOM_E_OUT_OF_MEMORY);
    EXPECT_NE(std::string(e.what()).find(std::to_string(std::numeric_limits<size_t>::max())), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(allocator.usage().requested, 0u);
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

TEST(CachingAllocator, LargeBlocksTakeTheirSizeAndServeNearbyRequests) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CachingAllocator allocator;
  const size_t first = 64 * kMiB + 1;
  void* block = allocator.allocate(first);
  ASSERT_NE(block, nullptr);
  loom::MemoryUsageBytes u = allocator.usage();
  EXPECT_EQ(u.requested, first);
  EXPECT_EQ(u.allocated, 66 * kMiB) << "64 MiB + 1 rounded to 2 MiB, not to the 80 MiB class";
  EXPECT_EQ(u.reserved, 66 * kMiB);
  allocator.deallocate(block);
  const uint64_t mallocs = allocator.device_mallocs();

  // 60 MiB: the cached 66 MiB block is at most a quarter larger, so it serves without a cudaMalloc.
  void* nearby = allocator.allocate(60 * kMiB);
  EXPECT_EQ(nearby, block);
  EXPECT_EQ(allocator.device_mallocs(), mallocs);
  u = allocator.usage();
  EXPECT_EQ(u.requested, 60 * kMiB);
  EXPECT_EQ(u.allocated, 66 * kMiB) << "the block's size, not the request's class";
  EXPECT_EQ(u.reserved, 66 * kMiB);
  allocator.deallocate(nearby);

  // 40 MiB: 66 MiB is more than a quarter larger; a block of its own. 70 MiB: too small a block.
  void* smaller = allocator.allocate(40 * kMiB);
  EXPECT_NE(smaller, block);
  void* larger = allocator.allocate(70 * kMiB);
  EXPECT_NE(larger, block);
  EXPECT_EQ(allocator.device_mallocs(), mallocs + 2);
  u = allocator.usage();
  EXPECT_EQ(u.allocated, 110 * kMiB);
  EXPECT_EQ(u.peak_allocated, 110 * kMiB);
  EXPECT_EQ(u.peak_requested, 110 * kMiB);
  EXPECT_EQ(u.reserved, 176 * kMiB) << "the 66 MiB block stays cached";

  // The best fit: with 66 and 70 MiB cached, a 66 MiB request takes its own size.
  allocator.deallocate(larger);
  EXPECT_EQ(allocator.allocate(66 * kMiB), block);
  allocator.deallocate(block);
  allocator.deallocate(smaller);
  allocator.empty_cache();
  EXPECT_EQ(allocator.reserved_bytes(), 0u);
}

TEST(CachingAllocator, SmallBlocksServeOnlyTheirOwnClass) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CachingAllocator allocator;
  void* block = allocator.allocate(4096);
  allocator.deallocate(block);
  const uint64_t mallocs = allocator.device_mallocs();
  void* other = allocator.allocate(3000);  // class 3072: the 4096 block is not its class
  EXPECT_NE(other, block);
  EXPECT_EQ(allocator.device_mallocs(), mallocs + 1);
  EXPECT_EQ(allocator.usage().allocated, 3072u);
  EXPECT_EQ(allocator.allocate(4000), block) << "class 4096: the cached block";
  allocator.deallocate(other);
  allocator.deallocate(block);
}

TEST(CachingAllocator, CountsStayExactUnderConcurrentThreads) {
  LOOM_SKIP_WITHOUT_CUDA();
  loom_cuda::CachingAllocator allocator;
  const size_t sizes[] = {100, 3000, 70'000, kMiB + 3, 9 * kMiB, 17 * kMiB + 5, 20 * kMiB};
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (cudaSetDevice(0) != cudaSuccess) ++failures;
      for (int round = 0; round < kRounds; ++round) {
        std::vector<void*> blocks;
        for (size_t i = 0; i < std::size(sizes); ++i) {
          blocks.push_back(allocator.allocate(sizes[(i + t + round) % std::size(sizes)]));
          if (blocks.back() == nullptr) ++failures;
        }
        for (void* block : blocks) allocator.deallocate(block);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  const loom::MemoryUsageBytes u = allocator.usage();
  EXPECT_EQ(u.requested, 0u);
  EXPECT_EQ(u.allocated, 0u);
  size_t all_sizes = 0, all_classes = 0;
  for (size_t bytes : sizes) {
    all_sizes += bytes;
    all_classes += loom_cuda::CachingAllocator::size_class(bytes);
  }
  EXPECT_LE(u.peak_requested, kThreads * all_sizes);
  EXPECT_GE(u.peak_requested, all_sizes);
  EXPECT_GE(u.peak_allocated, all_classes);
  EXPECT_LE(u.peak_allocated, u.reserved) << "every block is cached once all are freed";
  allocator.empty_cache();
  EXPECT_EQ(allocator.reserved_bytes(), 0u) << "the cache gave back exactly what it held";
}

// kLargeStep is meant to be a whole number of the pages the driver maps device memory in, so the
// 2 MiB rounding of large blocks costs nothing the driver would not take anyway. The driver API
// is reached through the runtime (cudaGetDriverEntryPointByVersion): linking libcuda would stop
// this executable from loading where there is no driver.
TEST(CachingAllocator, DeviceAllocationGranularityDividesTheLargeStep) {
  LOOM_SKIP_WITHOUT_CUDA();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // creates the context the driver call needs
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuMemGetAllocationGranularity", &entry, 10020, cudaEnableDefault,
                                             &found),
            cudaSuccess);
  ASSERT_EQ(found, cudaDriverEntryPointSuccess);
  ASSERT_NE(entry, nullptr);
  const auto granularity_of = reinterpret_cast<PFN_cuMemGetAllocationGranularity_v10020>(entry);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  ASSERT_EQ(granularity_of(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  RecordProperty("allocation_granularity_bytes", std::to_string(granularity));
  ASSERT_GT(granularity, 0u);
  EXPECT_EQ(loom_cuda::CachingAllocator::kLargeStep % granularity, 0u)
      << "the device's allocation granularity is " << granularity << " bytes";
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
