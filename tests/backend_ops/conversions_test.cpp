// Conversions and data movement: fill and zero (every dtype, strided views), copy between any
// strides (head split and merge, a strided column), cast between f32, bf16 and f16 rounding to
// nearest even as the SDK's scalar conversions do (loom/sdk/float16.hpp). All exact.
#include "backend_op_case.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(Conversions);

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

TEST_P(Conversions, FillAndZeroEveryDtypeAndStridedViewsAsTheReference) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    HostTensor host = HostTensor::zeros(dtype, {5, 37});
    DeviceTensor dev = upload(host);
    backend().fill(dev.view(), 3.0);
    reference().fill(host.view(), 3.0);
    expect_same_bits(dev.download(), host, "fill");
    // A column-narrowed, transposed view: every other element of it.
    const loom::Tensor narrowed = dev.view().narrow(1, 3, 20).permute({1, 0});
    const loom::Tensor narrowed_reference = host.view().narrow(1, 3, 20).permute({1, 0});
    backend().fill(narrowed, 2.0);
    reference().fill(narrowed_reference, 2.0);
    expect_same_bits(dev.download(), host, "fill of a strided view");
    backend().zero(narrowed);
    reference().zero(narrowed_reference);
    expect_same_bits(dev.download(), host, "zero of a strided view");
  }
}

TEST_P(Conversions, FillConvertsTheValueToEveryDtype) {
  DeviceTensor i64 = upload(HostTensor::ids({1, 1, 1, 1, 1, 1}, DType::i64, {6}));
  backend().fill(i64.view(), -3);
  EXPECT_EQ(read(i64), std::vector<float>(6, -3.0f));
  DeviceTensor b = upload_zeros(DType::bf16, {4});
  backend().fill(b.view(), 1.5);
  EXPECT_EQ(read(b), std::vector<float>(4, 1.5f));
  DeviceTensor m = upload(HostTensor::of(std::vector<float>(12, 9.0f), DType::f32, {3, 4}));
  backend().zero(m.view().narrow(1, 1, 2));
  EXPECT_EQ(read(m), (std::vector<float>{9, 0, 0, 9, 9, 0, 0, 9, 9, 0, 0, 9}));
  DeviceTensor u = upload_zeros(DType::u8, {3});
  backend().fill(u.view(), 7);
  EXPECT_EQ(read(u), (std::vector<float>{7, 7, 7}));
}

TEST_P(Conversions, CopyAnyStridesHeadSplitAndMerge) {
  // [B, T, H, d] → [B, H, T, d] (head split) and back, f32 and bf16.
  const int64_t B = 2, T = 37, H = 3, d = 8;
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    HostTensor src = HostTensor::of(random_floats(B * T * H * d, 11), dtype, {B, T, H, d});
    HostTensor heads_reference = HostTensor::zeros(dtype, {B, H, T, d});
    DeviceTensor src_dev = upload(src), heads = upload(heads_reference);
    reference().copy(src.view().permute({0, 2, 1, 3}), heads_reference.view());
    backend().copy(src_dev.view().permute({0, 2, 1, 3}), heads.view());
    const HostTensor split = heads.download();
    expect_same_bits(split, heads_reference, "head split");
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t c = 0; c < d; ++c)
            ASSERT_EQ(split.get(((b * H + h) * T + t) * d + c), src.get(((b * T + t) * H + h) * d + c));
    DeviceTensor back = upload_zeros(dtype, {B, T, H, d});
    backend().copy(heads.view(), back.view().permute({0, 2, 1, 3}));
    expect_same_bits(back.download(), src, "head merge");
    DeviceTensor dense = upload_zeros(dtype, {B, T, H, d});
    backend().copy(src_dev.view(), dense.view());
    expect_same_bits(dense.download(), src, "dense to dense");
  }
}

TEST_P(Conversions, CopyOfAStridedColumnAndShapesMustMatch) {
  // The start logits of a [N, 2] span-head output: a column with stride 2.
  const std::vector<float> values = random_floats(120, 112);
  DeviceTensor x = upload(HostTensor::of(values, DType::f32, {60, 2}));
  DeviceTensor start = upload_zeros(DType::f32, {60});
  DeviceTensor wrong_shape = upload_zeros(DType::f32, {2, 30});
  EXPECT_THROW(backend().copy(x.view().select(1, 0), wrong_shape.view()), loom::Error);
  backend().copy(x.view().select(1, 0), start.view());
  const std::vector<float> column = read(start);
  for (int64_t i = 0; i < 60; ++i) ASSERT_EQ(column[i], values[2 * i]);
}

TEST_P(Conversions, CastRoundsToNearestEvenLikeTheSdkAndTheReference) {
  std::vector<float> values = random_floats(1000, 111, -70000.0f, 70000.0f);
  values[0] = 1e-7f;  // f16 subnormal
  values[1] = 65519.0f;
  values[2] = 65520.0f;  // rounds to f16 infinity
  values[3] = -0.0f;
  values[5] = 1.00390625f;  // 1 + 2^-8: a bf16 tie, rounds to even
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes) {
      const std::string what = std::string(loom::dtype_name(from)) + " → " + loom::dtype_name(to);
      HostTensor src = HostTensor::of(values, from, {n});
      DeviceTensor src_dev = upload(src), out = upload_zeros(to, {n});
      backend().cast(src_dev.view(), out.view());
      const HostTensor cast = out.download();
      // The SDK's conversion of each source value (f16 → bf16 through its exact f32 value).
      expect_same_bits(cast, HostTensor::of(src.floats(), to, {n}), what + " against the SDK's rounding");
      HostTensor reference_out = HostTensor::zeros(to, {n});
      reference().cast(src.view(), reference_out.view());
      expect_same_bits(cast, reference_out, what + " against the reference");
    }
}

}  // namespace
}  // namespace loom_backend_ops
