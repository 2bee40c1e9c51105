// The sync_check debug option: a device fault names the op that caused it, and results are
// unchanged when nothing faults. The option itself is validated without a GPU in
// plugin_descriptor_test.cpp.
//
// A device fault poisons the process's CUDA context for good, so the faulting runs are death
// tests in the "threadsafe" style (the test binary re-executed for the one statement).
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

/// fill() of 1 Mi floats at an address no allocation can have, then synchronize(): the kernel
/// faults. Prints the error and exits 3 (the death tests' expected status).
[[noreturn]] void fault_in_fill(bool sync_check) {
  loom_cuda::CudaBackend gpu(0, false);
  gpu.set_sync_check(sync_check);
  const int64_t shape[] = {int64_t{1} << 20};
  // An address no allocation has, on purpose.
  void* unmapped = reinterpret_cast<void*>(uintptr_t{0x1000});  // NOLINT(performance-no-int-to-ptr)
  const loom::Tensor bogus =
      loom::Tensor::contiguous(unmapped, loom::DType::f32, shape, 1, loom::Device{loom::DeviceType::cuda, 0});
  try {
    gpu.fill(bogus, 1.0);
    gpu.synchronize();
    std::cerr << "no device fault was reported\n";
  } catch (const loom::Error& e) {
    std::cerr << e.what() << "\n";
  }
  std::cerr.flush();
  std::_Exit(3);
}

TEST(SyncCheckDeathTest, ADeviceFaultNamesItsOp) {
  LOOM_SKIP_WITHOUT_CUDA();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_in_fill(true), ::testing::ExitedWithCode(3),
              "backend/cuda: device fault in fill \\(sync_check, before synchronize\\): cudaError");
  // Without the option the same fault surfaces at the synchronising call, which names only itself.
  EXPECT_EXIT(fault_in_fill(false), ::testing::ExitedWithCode(3), "synchronize: cudaError");
}

TEST_F(CudaOpTest, SyncCheckLeavesResultsUnchanged) {
  gpu->set_sync_check(true);
  EXPECT_TRUE(gpu->sync_check());
  HostTensor a = HostTensor::of(random_floats(771, 1), loom::DType::f32, {771});
  HostTensor b = HostTensor::of(random_floats(771, 2), loom::DType::f32, {771});
  const DeviceTensor da = upload(a), db = upload(b);
  DeviceTensor sum = upload(HostTensor::zeros(loom::DType::f32, {771}));
  gpu->add(da.view(), db.view(), sum.view());
  gpu->axpby(2.0f, da.view(), 0.5f, sum.view());
  HostTensor expected = HostTensor::zeros(loom::DType::f32, {771});
  cpu.add(a.view(), b.view(), expected.view());
  cpu.axpby(2.0f, a.view(), 0.5f, expected.view());
  expect_close(sum.download(*gpu).floats(), expected.floats(), 1e-6, 1e-6, "add then axpby with sync_check");
}

}  // namespace
}  // namespace loom_cuda_test
