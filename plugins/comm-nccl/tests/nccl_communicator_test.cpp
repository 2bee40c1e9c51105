// communicator/nccl on a GPU, one rank: device all-reduce, broadcast and all-gather through the
// host, as a run uses it; the GPU it binds is the one backend/cuda's rule picks; buffers not on
// that GPU are refused. Exits 77 (ctest: skipped) with the reason when no GPU is present, 1 under
// LOOM_REQUIRE_GPU=1 (tests/gpu/gpu_requirement.hpp).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "device_placement.hpp"
#include "gpu_requirement.hpp"
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/extended_collectives.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace {

loom::host::Component<loom::Communicator>& communicator() {
  static loom::host::Component<loom::Communicator> comm = [] {
    loom::host::PluginSearchOptions search;
    // LOOM_PLUGIN_DIR in the environment: an installed tree's plugins (scripts/gpu-check on an
    // unpacked package) instead of the build's.
    const char* installed = std::getenv("LOOM_PLUGIN_DIR");
    search.directories = {installed != nullptr && *installed != '\0' ? installed : LOOM_PLUGIN_DIR};
    search.default_paths = false;
    search.environment = false;
    loom::host::PluginRegistry registry(search);
    const auto* entry = registry.find(LOOM_KIND_COMMUNICATOR, "nccl");
    if (entry == nullptr) throw std::runtime_error("communicator/nccl not found in " + search.directories[0]);
    return registry.create<loom::Communicator>(*entry, {"communicator", "timeout_s = 60.0\n", "", "test:1:1"},
                                               false);
  }();
  return comm;
}

loom::Communicator& comm() {
  return *communicator().get();
}

/// Its extra collectives, found as the host finds them: the named interface it offers.
loom::ExtendedCollectives& collectives() {
  auto* found = communicator().find<loom::ExtendedCollectives>();
  if (found == nullptr) throw std::runtime_error("communicator/nccl does not offer ExtendedCollectives");
  return *found;
}

std::vector<float> to_host(const float* device, size_t count) {
  std::vector<float> host(count);
  cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost);
  return host;
}

TEST(NcclCommunicator, DeviceCollectivesOnTheCallersStream) {
  ASSERT_TRUE(collectives().device_buffers());
  const int size = comm().size(), rank = comm().rank();
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f + static_cast<float>(rank);
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, n * sizeof(float) * static_cast<size_t>(size + 1)), cudaSuccess);
  cudaStream_t stream{};
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  collectives().device_all_reduce(device, n, loom::DType::f32, loom::ReduceOp::sum, stream);
  cudaStreamSynchronize(stream);
  std::vector<float> summed = to_host(device, n);
  for (size_t i = 0; i < n; i += 997) {
    float expected = 0;
    for (int r = 0; r < size; ++r) expected += static_cast<float>(i % 1000) * 0.5f + static_cast<float>(r);
    ASSERT_EQ(summed[i], expected) << i;
  }
  collectives().device_broadcast(device, n * sizeof(float), 0, stream);
  collectives().device_all_gather(device, n * sizeof(float), device + n, stream);
  cudaStreamSynchronize(stream);
  EXPECT_EQ(to_host(device + n, n), summed);
  cudaStreamDestroy(stream);
  cudaFree(device);
}

TEST(NcclCommunicator, BindsTheGpuBackendCudaWouldChoose) {
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  ASSERT_TRUE(collectives().device_buffers());  // constructed, so its device is current on this thread
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  const auto chosen =
      loom_cuda::choose_device(loom_cuda::kDeviceFromLocalRank, loom_cuda::launcher_local_rank(), devices);
  EXPECT_EQ(current, chosen.index) << "backend/cuda would take GPU " << chosen.index << " (" << chosen.why
                                   << ")";
}

TEST(NcclCommunicator, RefusesABufferThatIsNotOnItsGpu) {
  std::vector<float> host(1024, 1.0f);
  try {
    collectives().device_all_reduce(host.data(), host.size(), loom::DType::f32, loom::ReduceOp::sum, nullptr);
    FAIL() << "a host buffer was handed to NCCL";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend/cuda and communicator/nccl must use the same GPU"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string no_gpu = loom_gpu_test::no_cuda_device_reason();
  if (!no_gpu.empty()) return loom_gpu_test::exit_status_without_gpu("communicator/nccl", no_gpu);
  ::testing::InitGoogleTest(&argc, argv);
  communicator();
  return RUN_ALL_TESTS();
}
