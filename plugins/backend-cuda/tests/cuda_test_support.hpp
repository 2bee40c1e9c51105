// Shared pieces of the backend/cuda tests: skipping without a GPU (LOOM_SKIP_WITHOUT_CUDA, from
// tests/gpu/gpu_requirement.hpp: a failure instead under LOOM_REQUIRE_GPU=1), host tensors of any
// dtype, seeded random data and the comparisons (the backend-ops harness's HostTensor, references
// and checks), and device copies of host tensors.
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

#include "backend_ops/checks.hpp"
#include "backend_ops/references.hpp"
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

/// Seeded data and the comparisons: the backend-ops harness's (references.hpp, checks.hpp).
using loom_backend_ops::expect_equal;
using loom_backend_ops::expect_error_naming;
using loom_backend_ops::expect_same_bits;
using loom_backend_ops::random_floats;
using loom_backend_ops::random_ids;

/// Expects |actual − expected| ≤ atol + rtol·|expected| everywhere; reports the worst element.
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double rtol,
                         double atol, const std::string& what) {
  loom_backend_ops::expect_close(actual, expected, loom_backend_ops::Tolerance{rtol, atol}, what);
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
