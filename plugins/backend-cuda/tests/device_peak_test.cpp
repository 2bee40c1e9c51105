// The dense bf16 peak `loom bench` divides by: NVIDIA's published figures for the data-centre
// parts (runs without a GPU), and the description of the device this machine has (GPU only).
#include <gtest/gtest.h>

#include <cstring>

#include "cuda_test_support.hpp"
#include "device_peak.hpp"

namespace loom_cuda {
namespace {

TEST(DevicePeak, PublishedDataCentreFigures) {
  EXPECT_NEAR(dense_bf16_peak(9, 0, 132, 1980000) / 1e12, 989.4, 0.1);  // H100 SXM: 132 SMs at 1,980 MHz
  EXPECT_NEAR(dense_bf16_peak(9, 0, 114, 1755000) / 1e12, 756.4, 0.1);  // H100 PCIe
  EXPECT_NEAR(dense_bf16_peak(8, 0, 108, 1410000) / 1e12, 311.9, 0.1);  // A100
  EXPECT_EQ(dense_bf16_peak(7, 0, 80, 1530000), 0.0);                   // V100: no bf16 Tensor Cores
}

TEST(DevicePeak, DescribesThisDevice) {
  LOOM_SKIP_WITHOUT_CUDA();
  const loom::DeviceInfo info = describe_device(0);
  EXPECT_GT(std::strlen(info.name), 0u);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_EQ(info.peak_allocated_bytes, 0u);
}

}  // namespace
}  // namespace loom_cuda
