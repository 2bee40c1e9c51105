// backend/cuda's own limit on ResidualLayerNorm: a row is held in one block's registers, so rows
// wider than 16,384 are refused, naming the op and the limit. What the op computes on every
// backend: tests/backend_ops/residual_layernorm_test.cpp.
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

constexpr float kEps = 1e-5f;

TEST_F(CudaOpTest, ResidualLayerNormRowsWiderThan16384AreRefused) {
  // Wider rows than a block's registers hold: this backend's own limit, named.
  const int64_t wide = 16384 + 4;
  DeviceTensor wide_x = upload(HostTensor::zeros(DType::f32, {1, wide})),
               wide_sum = upload(HostTensor::zeros(DType::f32, {1, wide})),
               wide_out = upload(HostTensor::zeros(DType::f32, {1, wide})),
               wide_vec = upload(HostTensor::zeros(DType::f32, {wide})),
               one = upload(HostTensor::zeros(DType::f32, {1})),
               one2 = upload(HostTensor::zeros(DType::f32, {1}));
  expect_error_naming(
      [&] {
        gpu->residual_layernorm_forward(wide_x.view(), loom::Tensor{}, wide_x.view(), 0.0f, 1, 0,
                                        wide_vec.view(), wide_vec.view(), kEps, wide_sum.view(),
                                        wide_out.view(), loom::Tensor{}, one.view(), one2.view());
      },
      {"residual_layernorm_forward", "16384"});
}

}  // namespace
}  // namespace loom_cuda_test
