// The caching allocator: size classes (no GPU needed) and reuse without new cudaMalloc once warm.
#include "caching_allocator.hpp"

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

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
  if (no_device_reason().empty())
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
