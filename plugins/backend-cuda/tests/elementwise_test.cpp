// fill, zero, copy, cast, bias_add, bias_grad, bias + GELU, tanh, add and axpby against backend/cpu.
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

class ElementwiseTest : public CudaOpTest {};

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

TEST_F(ElementwiseTest, FillAndZeroEveryDtypeAndStridedViews) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    HostTensor host = HostTensor::zeros(dtype, {5, 37});
    DeviceTensor dev = upload(host);
    gpu->fill(dev.view(), 3.0);
    cpu.fill(host.view(), 3.0);
    EXPECT_EQ(dev.download(*gpu).bytes, host.bytes) << loom::dtype_name(dtype);
    // A column-narrowed, transposed view: every other element of it.
    loom::Tensor narrowed = dev.view().narrow(1, 3, 20).permute({1, 0});
    loom::Tensor narrowed_cpu = host.view().narrow(1, 3, 20).permute({1, 0});
    gpu->fill(narrowed, 2.0);
    cpu.fill(narrowed_cpu, 2.0);
    EXPECT_EQ(dev.download(*gpu).bytes, host.bytes) << loom::dtype_name(dtype);
    gpu->zero(narrowed);
    cpu.zero(narrowed_cpu);
    EXPECT_EQ(dev.download(*gpu).bytes, host.bytes) << loom::dtype_name(dtype);
  }
}

TEST_F(ElementwiseTest, CopyAnyStridesHeadSplitAndMerge) {
  // [B, T, H, d] → [B, H, T, d] (head split) and back, f32 and bf16.
  for (DType dtype : {DType::f32, DType::bf16}) {
    const int64_t B = 2, T = 37, H = 3, d = 8;
    HostTensor src = HostTensor::of(random_floats(B * T * H * d, 11), dtype, {B, T, H, d});
    HostTensor dst_cpu = HostTensor::zeros(dtype, {B, H, T, d});
    DeviceTensor src_gpu = upload(src), dst_gpu = upload(dst_cpu);
    cpu.copy(src.view().permute({0, 2, 1, 3}), dst_cpu.view());
    gpu->copy(src_gpu.view().permute({0, 2, 1, 3}), dst_gpu.view());
    EXPECT_EQ(dst_gpu.download(*gpu).bytes, dst_cpu.bytes);
    HostTensor back_cpu = HostTensor::zeros(dtype, {B, T, H, d});
    DeviceTensor back_gpu = upload(back_cpu);
    cpu.copy(dst_cpu.view(), back_cpu.view().permute({0, 2, 1, 3}));
    gpu->copy(dst_gpu.view(), back_gpu.view().permute({0, 2, 1, 3}));
    EXPECT_EQ(back_gpu.download(*gpu).bytes, src.bytes);
    // Dense to dense.
    DeviceTensor dense = upload(HostTensor::zeros(dtype, {B, T, H, d}));
    gpu->copy(src_gpu.view(), dense.view());
    EXPECT_EQ(dense.download(*gpu).bytes, src.bytes);
  }
}

TEST_F(ElementwiseTest, CastBetweenFloatTypesRoundsLikeTheCpu) {
  std::vector<float> values = random_floats(771, 5, -70000.0f, 70000.0f);
  values[0] = 1e-7f;  // f16 subnormal
  values[1] = 65519.0f;
  values[2] = 65520.0f;  // rounds to f16 infinity
  values[3] = -0.0f;
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes) {
      HostTensor src = HostTensor::of(values, from, {771});
      HostTensor out_cpu = HostTensor::zeros(to, {771});
      DeviceTensor src_gpu = upload(src), out_gpu = upload(out_cpu);
      cpu.cast(src.view(), out_cpu.view());
      gpu->cast(src_gpu.view(), out_gpu.view());
      EXPECT_EQ(out_gpu.download(*gpu).bytes, out_cpu.bytes)
          << loom::dtype_name(from) << " → " << loom::dtype_name(to);
    }
}

TEST_F(ElementwiseTest, BiasAddAndBiasGradWithPeriod) {
  const int64_t rows = 131;
  for (int64_t cols : {int64_t{771}, int64_t{768}})  // scalar and float4 paths
    for (int64_t period : {int64_t{1}, int64_t{131}}) {
      HostTensor x = HostTensor::of(random_floats(rows * cols, 1), DType::f32, {rows, cols});
      HostTensor bias = period == 1
                            ? HostTensor::of(random_floats(cols, 2), DType::f32, {cols})
                            : HostTensor::of(random_floats(period * cols, 2), DType::f32, {period, cols});
      DeviceTensor x_gpu = upload(x), bias_gpu = upload(bias);
      cpu.bias_add(x.view(), bias.view());
      gpu->bias_add(x_gpu.view(), bias_gpu.view());
      expect_close(x_gpu.download(*gpu).floats(), x.floats(), 0, 0, "bias_add");
      // bias_grad accumulates into a non-zero dbias.
      HostTensor dbias = bias;
      DeviceTensor dbias_gpu = upload(dbias);
      cpu.bias_grad(x.view(), dbias.view());
      gpu->bias_grad(x_gpu.view(), dbias_gpu.view());
      const std::vector<float> first = dbias_gpu.download(*gpu).floats();
      expect_close(first, dbias.floats(), 1e-5, 1e-4, "bias_grad period " + std::to_string(period));
      // Deterministic: the same sum again gives the same bits.
      DeviceTensor again = upload(bias);
      gpu->bias_grad(x_gpu.view(), again.view());
      expect_equal(again.download(*gpu).floats(), first, "bias_grad rerun");
    }
  // Many rows: several row tiles in the two-pass reduction.
  HostTensor big = HostTensor::of(random_floats(1500 * 37, 9), DType::f32, {1500, 37});
  HostTensor dbias = HostTensor::zeros(DType::f32, {37});
  DeviceTensor big_gpu = upload(big), dbias_gpu = upload(dbias);
  cpu.bias_grad(big.view(), dbias.view());
  gpu->bias_grad(big_gpu.view(), dbias_gpu.view());
  expect_close(dbias_gpu.download(*gpu).floats(), dbias.floats(), 1e-5, 1e-4, "bias_grad 1500 rows");
  // More rows than 1024 tiles of 256: the tiles grow instead.
  const int64_t tall = 300007;
  HostTensor tall_x = HostTensor::of(random_floats(tall * 5, 10), DType::f32, {tall, 5});
  HostTensor tall_dbias = HostTensor::zeros(DType::f32, {5});
  DeviceTensor tall_x_gpu = upload(tall_x), tall_dbias_gpu = upload(tall_dbias);
  cpu.bias_grad(tall_x.view(), tall_dbias.view());
  gpu->bias_grad(tall_x_gpu.view(), tall_dbias_gpu.view());
  expect_close(tall_dbias_gpu.download(*gpu).floats(), tall_dbias.floats(), 1e-4, 1e-2,
               "bias_grad 300007 rows");
}

TEST_F(ElementwiseTest, BiasGeluForwardBackwardBothVariants) {
  const int64_t rows = 37, cols = 771;
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh})
    for (DType dtype : kFloatTypes)
      for (bool with_bias : {true, false}) {
        const std::string what = std::string("gelu ") + (variant == loom::Gelu::erf ? "erf " : "tanh ") +
                                 loom::dtype_name(dtype) + (with_bias ? " bias" : "");
        HostTensor x = HostTensor::of(random_floats(rows * cols, 3, -4.0f, 4.0f), dtype, {rows, cols});
        HostTensor bias = HostTensor::of(random_floats(cols, 4), DType::f32, {cols});
        HostTensor y = HostTensor::zeros(dtype, {rows, cols});
        DeviceTensor x_gpu = upload(x), bias_gpu = upload(bias), y_gpu = upload(y);
        const loom::Tensor b_cpu = with_bias ? bias.view() : loom::Tensor{};
        const loom::Tensor b_gpu = with_bias ? bias_gpu.view() : loom::Tensor{};
        cpu.bias_gelu_forward(x.view(), b_cpu, y.view(), variant);
        gpu->bias_gelu_forward(x_gpu.view(), b_gpu, y_gpu.view(), variant);
        expect_close(y_gpu.download(*gpu).floats(), y.floats(), rtol_for(dtype), 1e-5 + atol_for(dtype),
                     what);

        HostTensor dy = HostTensor::of(random_floats(rows * cols, 5), DType::f32, {rows, cols});
        HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
        HostTensor dbias = HostTensor::of(random_floats(cols, 6), DType::f32, {cols});
        DeviceTensor dy_gpu = upload(dy), dx_gpu = upload(dx), dbias_gpu = upload(dbias);
        cpu.bias_gelu_backward(dy.view(), x.view(), b_cpu, dx.view(),
                               with_bias ? dbias.view() : loom::Tensor{}, variant);
        gpu->bias_gelu_backward(dy_gpu.view(), x_gpu.view(), b_gpu, dx_gpu.view(),
                                with_bias ? dbias_gpu.view() : loom::Tensor{}, variant);
        expect_close(dx_gpu.download(*gpu).floats(), dx.floats(), 1e-5, 1e-5, what + " dx");
        expect_close(dbias_gpu.download(*gpu).floats(), dbias.floats(), 1e-5, 1e-4, what + " dbias");
      }
}

TEST_F(ElementwiseTest, GeluInPlaceAndBackwardAliasingDy) {
  const int64_t rows = 5, cols = 131;
  HostTensor x = HostTensor::of(random_floats(rows * cols, 7, -3.0f, 3.0f), DType::f32, {rows, cols});
  HostTensor y = HostTensor::zeros(DType::f32, {rows, cols});
  cpu.bias_gelu_forward(x.view(), loom::Tensor{}, y.view(), loom::Gelu::erf);
  DeviceTensor x_gpu = upload(x);
  gpu->bias_gelu_forward(x_gpu.view(), loom::Tensor{}, x_gpu.view(), loom::Gelu::erf);
  expect_close(x_gpu.download(*gpu).floats(), y.floats(), 1e-5, 1e-6, "gelu in place");
  HostTensor dy = HostTensor::of(random_floats(rows * cols, 8), DType::f32, {rows, cols});
  HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
  cpu.bias_gelu_backward(dy.view(), x.view(), loom::Tensor{}, dx.view(), loom::Tensor{}, loom::Gelu::tanh);
  DeviceTensor dy_gpu = upload(dy), x2 = upload(x);
  gpu->bias_gelu_backward(dy_gpu.view(), x2.view(), loom::Tensor{}, dy_gpu.view(), loom::Tensor{},
                          loom::Gelu::tanh);
  expect_close(dy_gpu.download(*gpu).floats(), dx.floats(), 1e-5, 1e-6, "gelu backward dx aliasing dy");
}

TEST_F(ElementwiseTest, TanhAddAxpby) {
  const int64_t n = 768 + 3;
  HostTensor x = HostTensor::of(random_floats(n, 1, -3.0f, 3.0f), DType::f32, {n});
  HostTensor y = HostTensor::zeros(DType::f32, {n});
  DeviceTensor x_gpu = upload(x), y_gpu = upload(y);
  cpu.tanh_forward(x.view(), y.view());
  gpu->tanh_forward(x_gpu.view(), y_gpu.view());
  expect_close(y_gpu.download(*gpu).floats(), y.floats(), 1e-6, 1e-6, "tanh_forward");
  HostTensor dy = HostTensor::of(random_floats(n, 2), DType::f32, {n});
  HostTensor dx = HostTensor::zeros(DType::f32, {n});
  DeviceTensor dy_gpu = upload(dy), dx_gpu = upload(dx);
  cpu.tanh_backward(dy.view(), y.view(), dx.view());
  gpu->tanh_backward(dy_gpu.view(), y_gpu.view(), dx_gpu.view());
  expect_close(dx_gpu.download(*gpu).floats(), dx.floats(), 1e-5, 1e-6, "tanh_backward");

  for (DType a_type : kFloatTypes)
    for (DType out_type : {DType::f32, DType::bf16}) {
      HostTensor a = HostTensor::of(random_floats(n, 3), a_type, {n});
      HostTensor b = HostTensor::of(random_floats(n, 4), DType::f32, {n});
      HostTensor out = HostTensor::zeros(out_type, {n});
      DeviceTensor a_gpu = upload(a), b_gpu = upload(b), out_gpu = upload(out);
      cpu.add(a.view(), b.view(), out.view());
      gpu->add(a_gpu.view(), b_gpu.view(), out_gpu.view());
      EXPECT_EQ(out_gpu.download(*gpu).bytes, out.bytes) << "add " << loom::dtype_name(a_type);
    }

  // axpby: vector path (aligned, n % 4 = 3 leaves a scalar tail), beta = 0, and x aliasing y.
  for (float beta : {0.5f, 0.0f}) {
    HostTensor yy = HostTensor::of(random_floats(n, 5), DType::f32, {n});
    DeviceTensor yy_gpu = upload(yy);
    cpu.axpby(1.5f, x.view(), beta, yy.view());
    gpu->axpby(1.5f, x_gpu.view(), beta, yy_gpu.view());
    expect_close(yy_gpu.download(*gpu).floats(), yy.floats(), 1e-6, 1e-6, "axpby");
  }
  // Misaligned views (offset by one element) take the scalar path.
  HostTensor z = HostTensor::of(random_floats(n, 6), DType::f32, {n});
  DeviceTensor z_gpu = upload(z);
  cpu.axpby(2.0f, x.view().narrow(0, 1, n - 1), 1.0f, z.view().narrow(0, 1, n - 1));
  gpu->axpby(2.0f, x_gpu.view().narrow(0, 1, n - 1), 1.0f, z_gpu.view().narrow(0, 1, n - 1));
  expect_close(z_gpu.download(*gpu).floats(), z.floats(), 1e-6, 1e-6, "axpby misaligned");
  gpu->axpby(2.0f, z_gpu.view(), 1.0f, z_gpu.view());
  cpu.axpby(2.0f, z.view(), 1.0f, z.view());
  expect_close(z_gpu.download(*gpu).floats(), z.floats(), 1e-6, 1e-6, "axpby x aliasing y");
}

TEST_F(ElementwiseTest, RejectsHostMemory) {
  HostTensor x = HostTensor::zeros(DType::f32, {4, 4});
  EXPECT_THROW(gpu->tanh_forward(x.view(), x.view()), loom::Error);
  EXPECT_THROW(gpu->fill(x.view(), 1.0), loom::Error);
}

}  // namespace
}  // namespace loom_cuda_test
