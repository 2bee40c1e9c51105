// additive_key_mask and softmax forward/backward: scale and additive key mask against a float64
// reference and central differences, masked keys at exactly zero probability, a fully masked row
// uniform (as PyTorch), in place; 16-bit scores and probabilities against f32; against the
// reference backend for every mask dtype and storage pair, at odd sizes, and over the attention
// rows of a batch of 256 × 128 tokens with 16 heads.
#include "backend_op_case.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(Softmax);

std::vector<double> reference_softmax(const std::vector<double>& s, const std::vector<float>& mask,
                                      double scale, int64_t B, int64_t rows_per_batch, int64_t T) {
  std::vector<double> p(s.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t q = 0; q < rows_per_batch; ++q) {
      const int64_t row = (b * rows_per_batch + q) * T;
      double max = -INFINITY, sum = 0;
      for (int64_t k = 0; k < T; ++k) max = std::max(max, scale * s[row + k] + mask[b * T + k]);
      for (int64_t k = 0; k < T; ++k) sum += std::exp(scale * s[row + k] + mask[b * T + k] - max);
      for (int64_t k = 0; k < T; ++k) p[row + k] = std::exp(scale * s[row + k] + mask[b * T + k] - max) / sum;
    }
  return p;
}

TEST_P(Softmax, MaskedForwardAndBackwardMatchFloat64Reference) {
  const int64_t B = 2, H = 3, T = 7;
  const float scale = 0.37f;
  const auto scores = random_floats(B * H * T * T, 41, -3, 3), w = random_floats(scores.size(), 42);
  const std::vector<int64_t> attention = {1, 1, 1, 1, 1, 0, 0, /**/ 1, 1, 1, 1, 1, 1, 1};
  DeviceTensor attend = upload(HostTensor::ids(attention, DType::i32, {B, T})),
               mask_dev = upload_zeros(DType::f32, {B, T}),
               scores_dev = upload(HostTensor::of(scores, DType::f32, {B, H, T, T})),
               probs = upload_zeros(DType::f32, {B, H, T, T}),
               w_dev = upload(HostTensor::of(w, DType::f32, {B, H, T, T})),
               dscores = upload_zeros(DType::f32, {B, H, T, T});
  backend().additive_key_mask(attend.view(), mask_dev.view());
  const std::vector<float> mask = read(mask_dev);
  EXPECT_EQ(mask[5], loom::kMaskedKey);
  EXPECT_EQ(mask[4], 0.0f);
  backend().softmax_forward(scores_dev.view(), mask_dev.view(), scale, probs.view());
  const auto sd = to_double(scores);
  const std::vector<float> p = read(probs);
  expect_close(p, reference_softmax(sd, mask, scale, B, H * T, T),
               for_this_backend(kProbabilitiesAgainstFloat64, DType::f32), "probs");
  for (int64_t r = 0; r < H * T; ++r) {
    EXPECT_EQ(p[r * T + 5], 0.0f);
    EXPECT_EQ(p[r * T + 6], 0.0f);
  }
  backend().softmax_backward(w_dev.view(), probs.view(), scale, dscores.view());
  const auto expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_softmax(v, mask, scale, B, H * T, T), w); }, sd);
  expect_close(read(dscores), expected,
               for_this_backend(kProbabilityGradientAgainstCentralDifferences, DType::f32), "dscores");
}

TEST_P(Softmax, FullyMaskedRowIsUniformAndInPlaceWorks) {
  const int64_t T = 4;
  DeviceTensor scores =
      upload(HostTensor::of({1, 2, 3, 4, 0.5f, -1, 2, 0, 3, 3, 3, 3, -2, 1, 0, 0}, DType::f32, {1, 1, T, T}));
  DeviceTensor mask = upload(HostTensor::of(std::vector<float>(T, loom::kMaskedKey), DType::f32, {1, T}));
  backend().softmax_forward(scores.view(), mask.view(), 1.0f, scores.view());
  for (float p : read(scores)) EXPECT_FLOAT_EQ(p, 0.25f);
}

TEST_P(Softmax, SixteenBitScoresAndProbabilitiesAgainstF32) {
  // bf16: scores seen exactly, the probabilities rounded once, a backward from rounded ones.
  const int64_t rows = 11, T = 37;
  const HostTensor s16 = HostTensor::of(random_floats(rows * T, 43, -4, 4), DType::bf16, {rows, T});
  DeviceTensor s16_dev = upload(s16), sr = upload(HostTensor::of(s16.floats(), DType::f32, {rows, T})),
               p = upload_zeros(DType::f32, {rows, T}), p_from16 = upload_zeros(DType::f32, {rows, T}),
               p16 = upload_zeros(DType::bf16, {rows, T});
  backend().softmax_forward(sr.view(), loom::Tensor{}, 0.125f, p.view());
  backend().softmax_forward(s16_dev.view(), loom::Tensor{}, 0.125f, p_from16.view());
  backend().softmax_forward(s16_dev.view(), loom::Tensor{}, 0.125f, p16.view());
  expect_close(read(p_from16), read(p), for_this_backend(kSameValuesOtherStorage, DType::f32),
               "bf16 scores against f32 of the same values");
  expect_close(read(p16), read(p), for_this_backend(one_rounding(DType::bf16, 1e-8), DType::bf16),
               "bf16 probabilities: one rounding");
  DeviceTensor dp = upload(HostTensor::of(random_floats(rows * T, 44), DType::f32, {rows, T})),
               ds = upload_zeros(DType::f32, {rows, T}), ds16 = upload_zeros(DType::f32, {rows, T});
  backend().softmax_backward(dp.view(), p.view(), 0.125f, ds.view());
  backend().softmax_backward(dp.view(), p16.view(), 0.125f, ds16.view());
  expect_close(read(ds16), read(ds), for_this_backend(kThroughBf16Probabilities, DType::f32),
               "backward from bf16 probabilities");

  // f16: probabilities of f16 scores with a masked key, one f16 ulp from the f32 ones.
  const int64_t r = 6, cols = 40;
  const HostTensor x16 =
      HostTensor::of(random_floats(r * cols, 27, -3.0f, 3.0f), DType::f16, {1, 1, r, cols});
  std::vector<float> key_mask(cols, 0.0f);
  key_mask[cols - 1] = -10000.0f;
  DeviceTensor x16_dev = upload(x16), x = upload(HostTensor::of(x16.floats(), DType::f32, {1, 1, r, cols})),
               mask = upload(HostTensor::of(key_mask, DType::f32, {1, cols})),
               y = upload_zeros(DType::f32, {1, 1, r, cols}), y16 = upload_zeros(DType::f16, {1, 1, r, cols});
  backend().softmax_forward(x.view(), mask.view(), 0.5f, y.view());
  backend().softmax_forward(x16_dev.view(), mask.view(), 0.5f, y16.view());
  expect_close(read(y16), read(y), for_this_backend(one_ulp(DType::f16, 1e-7), DType::f16),
               "f16 probabilities, one f16 rounding");
}

TEST_P(Softmax, AdditiveKeyMaskEveryMaskDtypeAsTheReference) {
  const int64_t B = 3, T = 37;
  std::vector<int64_t> mask(B * T);
  for (int64_t i = 0; i < B * T; ++i) mask[i] = (i * 7) % 5 != 0 ? 1 : 0;
  for (DType dtype : {DType::i32, DType::i64, DType::f32}) {
    HostTensor m = dtype == DType::f32
                       ? HostTensor::of(std::vector<float>(mask.begin(), mask.end()), dtype, {B, T})
                       : HostTensor::ids(mask, dtype, {B, T});
    HostTensor out = HostTensor::zeros(DType::f32, {B, T});
    DeviceTensor m_dev = upload(m), out_dev = upload(out);
    reference().additive_key_mask(m.view(), out.view());
    backend().additive_key_mask(m_dev.view(), out_dev.view());
    expect_equal(read(out_dev), out.floats(), loom::dtype_name(dtype));
  }
}

TEST_P(Softmax, MaskScaleAndAllMaskedRowsEveryStorageAsTheReference) {
  const int64_t B = 2, H = 3, T = 37;
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t t = 20; t < T; ++t) mask[t] = loom::kMaskedKey;     // batch 0: padding
  for (int64_t t = 0; t < T; ++t) mask[T + t] = loom::kMaskedKey;  // batch 1: every key masked
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  DeviceTensor key_mask_dev = upload(key_mask);
  for (DType in : {DType::f32, DType::bf16})
    for (DType out : {DType::f32, DType::bf16}) {
      const std::string what = std::string("softmax ") + loom::dtype_name(in) + "→" + loom::dtype_name(out);
      HostTensor scores = HostTensor::of(random_floats(B * H * T * T, 1, -5.0f, 5.0f), in, {B, H, T, T});
      HostTensor probs = HostTensor::zeros(out, {B, H, T, T});
      DeviceTensor scores_dev = upload(scores), probs_dev = upload(probs);
      reference().softmax_forward(scores.view(), key_mask.view(), 0.125f, probs.view());
      backend().softmax_forward(scores_dev.view(), key_mask_dev.view(), 0.125f, probs_dev.view());
      expect_close(read(probs_dev), probs.floats(), probabilities_across_implementations(out), what);
      // Without a mask, any shape: rows are the last dim.
      reference().softmax_forward(scores.view(), loom::Tensor{}, 1.0f, probs.view());
      backend().softmax_forward(scores_dev.view(), loom::Tensor{}, 1.0f, probs_dev.view());
      expect_close(read(probs_dev), probs.floats(), probabilities_across_implementations(out),
                   what + " unmasked");

      HostTensor dprobs = HostTensor::of(random_floats(B * H * T * T, 2), DType::f32, {B, H, T, T});
      HostTensor dscores = HostTensor::zeros(DType::f32, {B, H, T, T});
      DeviceTensor dprobs_dev = upload(dprobs), dscores_dev = upload(dscores);
      reference().softmax_backward(dprobs.view(), probs.view(), 0.125f, dscores.view());
      backend().softmax_backward(dprobs_dev.view(), probs_dev.view(), 0.125f, dscores_dev.view());
      expect_close(read(dscores_dev), dscores.floats(), kSoftmaxGradientAcrossImplementations,
                   what + " backward");
      // dscores aliasing dprobs.
      backend().softmax_backward(dprobs_dev.view(), probs_dev.view(), 0.125f, dprobs_dev.view());
      expect_close(read(dprobs_dev), dscores.floats(), kSoftmaxGradientAcrossImplementations,
                   what + " backward in place");
    }
}

TEST_P(Softmax, InPlaceOverLongRowsAsTheReference) {
  const int64_t rows = 5, cols = 768 + 3;
  HostTensor scores = HostTensor::of(random_floats(rows * cols, 3, -10.0f, 10.0f), DType::f32, {rows, cols});
  HostTensor probs = HostTensor::zeros(DType::f32, {rows, cols});
  DeviceTensor scores_dev = upload(scores);
  reference().softmax_forward(scores.view(), loom::Tensor{}, 0.5f, probs.view());
  backend().softmax_forward(scores_dev.view(), loom::Tensor{}, 0.5f, scores_dev.view());
  expect_close(read(scores_dev), probs.floats(), kProbabilitiesAcrossImplementations, "softmax in place");
}

TEST_P(Softmax, AttentionRowsOfABatchOf256x128TokensAsTheReference) {
  // The attention probabilities of 256 sequences × 16 heads × 128 queries: 524,288 rows of 128
  // keys, each sequence padded to its own length (every length from 1 to 128), bf16 in and out as
  // in mixed precision.
  //
  // Tolerances, and why: forward, both sides round one f32 probability (~1e-6 apart) to bf16: one
  // bf16 ulp, and masked keys exactly 0. Backward reads the same bf16 probabilities on both sides
  // (the reference's), so dscores = scale·p·(dp − Σ dp·p) differs only by the order of the row's
  // dot product: backend/cpu's is within 1e-8 of float64: rtol 1e-5, atol 1e-7 (the values are
  // mostly 1e-4 to 1e-2).
  LOOM_SKIP_WHERE_REFERENCE_CODE_RUNS();
  const int64_t B = 256, H = 16, T = 128;
  const float scale = 0.125f;
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T - (37 * b + 5) % T; t < T; ++t) mask[b * T + t] = loom::kMaskedKey;
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  HostTensor scores =
      HostTensor::of(random_floats(B * H * T * T, 1, -16.0f, 16.0f), DType::bf16, {B, H, T, T});
  HostTensor probs = HostTensor::zeros(DType::bf16, {B, H, T, T});
  DeviceTensor key_mask_dev = upload(key_mask), scores_dev = upload(scores), probs_dev = upload(probs);
  reference().softmax_forward(scores.view(), key_mask.view(), scale, probs.view());
  backend().softmax_forward(scores_dev.view(), key_mask_dev.view(), scale, probs_dev.view());
  expect_close(read(probs_dev), probs.floats(), one_ulp(DType::bf16),
               "softmax bf16 → bf16, 524288 rows of 128");

  HostTensor dprobs = HostTensor::of(random_floats(B * H * T * T, 2), DType::f32, {B, H, T, T});
  HostTensor dscores = HostTensor::zeros(DType::f32, {B, H, T, T});
  DeviceTensor reference_probs = upload(probs), dprobs_dev = upload(dprobs), dscores_dev = upload(dscores);
  reference().softmax_backward(dprobs.view(), probs.view(), scale, dscores.view());
  backend().softmax_backward(dprobs_dev.view(), reference_probs.view(), scale, dscores_dev.view());
  expect_close(read(dscores_dev), dscores.floats(), kLongRowDotProductAcrossImplementations,
               "softmax backward, 524288 rows of 128");
}

}  // namespace
}  // namespace loom_backend_ops
