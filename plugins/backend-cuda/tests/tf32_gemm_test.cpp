// backend/cuda's tf32 option: f32 GEMMs on TF32 Tensor Cores (10-bit mantissas) stay within a
// TF32 bound of backend/cpu. What every backend's GEMM computes: tests/backend_ops/gemm_test.cpp.
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

TEST_F(CudaOpTest, Tf32GemmStaysCloseToTheCpu) {
  loom_cuda::CudaBackend tf32(0, true);
  const int64_t M = 64, K = 256, N = 64;
  HostTensor a = HostTensor::of(random_floats(M * K, 15), DType::f32, {M, K});
  HostTensor b = HostTensor::of(random_floats(K * N, 16), DType::f32, {K, N});
  HostTensor c = HostTensor::zeros(DType::f32, {M, N});
  DeviceTensor a_gpu(tf32, a), b_gpu(tf32, b), c_gpu(tf32, c);
  cpu.gemm(a.view(), false, b.view(), false, c.view(), 1.0f, 0.0f);
  tf32.gemm(a_gpu.view(), false, b_gpu.view(), false, c_gpu.view(), 1.0f, 0.0f);
  expect_close(c_gpu.download(tf32).floats(), c.floats(), 5e-3, 5e-2, "tf32");
}

}  // namespace
}  // namespace loom_cuda_test
