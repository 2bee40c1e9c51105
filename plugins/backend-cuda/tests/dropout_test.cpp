// Dropout draws exactly the CPU's Philox bits: forward and backward results are bit-identical to
// backend/cpu for every dtype, odd sizes and offsets that do not start a Philox block.
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

class DropoutTest : public CudaOpTest {};

TEST_F(DropoutTest, ForwardIsBitIdenticalToTheCpu) {
  const int64_t n = 37 * 771;
  for (DType in : {DType::f32, DType::bf16, DType::f16})
    for (DType out : {DType::f32, DType::bf16})
      for (uint64_t offset : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 33) + 5})
        for (float p : {0.0f, 0.1f, 0.5f}) {
          HostTensor x = HostTensor::of(random_floats(n, 1), in, {37, 771});
          HostTensor y = HostTensor::zeros(out, {37, 771});
          DeviceTensor x_g = upload(x), y_g = upload(y);
          cpu.dropout_forward(x.view(), y.view(), p, 0x1234567890abcdefull, offset);
          gpu->dropout_forward(x_g.view(), y_g.view(), p, 0x1234567890abcdefull, offset);
          EXPECT_EQ(y_g.download(*gpu).bytes, y.bytes)
              << loom::dtype_name(in) << "→" << loom::dtype_name(out) << " offset " << offset << " p " << p;
        }
}

TEST_F(DropoutTest, BackwardInPlaceMatchesTheCpu) {
  const int64_t n = 131 * 3 + 1;
  HostTensor dy = HostTensor::of(random_floats(n, 2), DType::f32, {n});
  HostTensor dx = HostTensor::zeros(DType::f32, {n});
  DeviceTensor dy_g = upload(dy);
  cpu.dropout_backward(dy.view(), dx.view(), 0.3f, 42, 7);
  gpu->dropout_backward(dy_g.view(), dy_g.view(), 0.3f, 42, 7);
  expect_equal(dy_g.download(*gpu).floats(), dx.floats(), "dropout_backward in place");
}

TEST_F(DropoutTest, RejectsProbabilityOne) {
  DeviceTensor x = upload(HostTensor::zeros(DType::f32, {4}));
  EXPECT_THROW(gpu->dropout_forward(x.view(), x.view(), 1.0f, 1, 0), loom::Error);
}

}  // namespace
}  // namespace loom_cuda_test
