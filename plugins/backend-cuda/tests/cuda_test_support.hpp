// Shared pieces of the backend/cuda tests: skipping without a GPU (LOOM_SKIP_WITHOUT_CUDA, from
// tests/gpu/gpu_requirement.hpp: a failure instead under LOOM_REQUIRE_GPU=1), host tensors of any
// dtype (the backend-ops harness's HostTensor), device copies of them, seeded random data and a
// closeness check naming the worst element.
//
// Every op test runs the same op on backend/cpu (CpuBackend(1), the reference) and on the GPU
// from the same inputs and compares the results.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend_ops/tensors.hpp"
#include "cpu_backend.hpp"
#include "cuda_backend.hpp"
#include "gpu_requirement.hpp"
#include "loom/sdk/backend.hpp"

namespace loom_cuda_test {

using loom_gpu_test::no_cuda_device_reason;

/// Host data of any dtype with a shape: the backend-ops harness's (tests/backend_ops/tensors.hpp).
using loom_backend_ops::HostTensor;

/// A device copy of a HostTensor (allocated on the GPU backend; frees itself).
struct DeviceTensor {
  DeviceTensor(loom::Backend& backend, const HostTensor& host)
      : dtype(host.dtype), shape(host.shape), buffer(backend, host.bytes.size()) {
    backend.copy_from_host(buffer.data(), host.bytes.data(), host.bytes.size());
  }
  loom::Tensor view() const {
    return loom::Tensor::contiguous(buffer.data(), dtype, shape.data(), static_cast<int>(shape.size()),
                                    loom::Device{loom::DeviceType::cuda, 0});
  }
  /// The contents, back on the host.
  HostTensor download(loom::Backend& backend) const {
    HostTensor host = HostTensor::zeros(dtype, shape);
    backend.copy_to_host(host.bytes.data(), buffer.data(), host.bytes.size());
    return host;
  }
  loom::DType dtype;
  std::vector<int64_t> shape;
  loom::Buffer buffer;
};

/// `n` uniform values in [lo, hi), reproducible for a given seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(engine);
  return v;
}

/// `n` ids uniform in [0, vocab), reproducible for a given seed.
inline std::vector<int64_t> random_ids(size_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int64_t> dist(0, vocab - 1);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = dist(engine);
  return ids;
}

/// Expects |actual − expected| ≤ atol + rtol·|expected| everywhere; reports the worst element.
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double rtol,
                         double atol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0;
  size_t worst_index = 0;
  bool ok = true;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    const double excess = std::abs(a - e) - (atol + rtol * std::abs(e));
    if (!(excess <= 0)) ok = false;
    if (!(excess <= worst)) {
      worst = std::isnan(excess) ? INFINITY : excess;
      worst_index = i;
    }
  }
  EXPECT_TRUE(ok) << what << ": worst element " << worst_index << " is " << actual[worst_index]
                  << ", expected " << expected[worst_index] << " (excess " << worst << " over atol " << atol
                  << " + rtol " << rtol << "·|expected|)";
}

/// Expects bit-identical floats.
inline void expect_equal(const std::vector<float>& actual, const std::vector<float>& expected,
                         const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected exactly "
                    << expected[i];
      return;
    }
}

/// Tolerances of a result computed in f32 and stored as `dtype`.
inline double rtol_for(loom::DType dtype) {
  return dtype == loom::DType::bf16 ? 1e-2 : dtype == loom::DType::f16 ? 2e-3 : 2e-5;
}
inline double atol_for(loom::DType dtype) {
  return dtype == loom::DType::bf16 ? 1e-2 : dtype == loom::DType::f16 ? 2e-3 : 2e-5;
}

/// Fixture: a GPU backend (device 0) and the CPU reference; skips without a GPU.
class CudaOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LOOM_SKIP_WITHOUT_CUDA();
    gpu = std::make_unique<loom_cuda::CudaBackend>(0, false);
  }
  DeviceTensor upload(const HostTensor& host) { return DeviceTensor(*gpu, host); }

  loom_cpu::CpuBackend cpu{1};
  std::unique_ptr<loom_cuda::CudaBackend> gpu;
};

}  // namespace loom_cuda_test
