// layernorm forward/backward, additive_key_mask and softmax forward/backward against backend/cpu,
// at odd sizes and at production sizes (LayerNorm over 32,768 rows of 1,024; softmax over the
// 4,096·128 attention rows of a batch of 256 × 128 tokens with 16 heads).
#include <cmath>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

/// (rtol, atol) of one compared output.
struct Bound {
  double rtol, atol;
};
/// How closely each output of a LayerNorm comparison must agree.
struct LayerNormBounds {
  Bound y, mean, rstd, dx, dgamma, dbeta;
};

class NormalizationTest : public CudaOpTest {
 protected:
  /// layernorm_forward, then layernorm_backward once per `accumulate` value, on random data of
  /// rows × cols (x in `dtype`) on both backends; every output compared within `bounds`.
  void compare_layernorm(int64_t rows, int64_t cols, DType dtype, std::initializer_list<bool> accumulate,
                         const LayerNormBounds& bounds, const std::string& what) {
    HostTensor x = HostTensor::of(random_floats(rows * cols, 1, -2.0f, 3.0f), dtype, {rows, cols});
    HostTensor gamma = HostTensor::of(random_floats(cols, 2, 0.5f, 1.5f), DType::f32, {cols});
    HostTensor beta = HostTensor::of(random_floats(cols, 3), DType::f32, {cols});
    HostTensor y = HostTensor::zeros(dtype, {rows, cols});
    HostTensor mean = HostTensor::zeros(DType::f32, {rows}), rstd = HostTensor::zeros(DType::f32, {rows});
    DeviceTensor x_g = upload(x), gamma_g = upload(gamma), beta_g = upload(beta), y_g = upload(y),
                 mean_g = upload(mean), rstd_g = upload(rstd);
    cpu.layernorm_forward(x.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(), rstd.view());
    gpu->layernorm_forward(x_g.view(), gamma_g.view(), beta_g.view(), 1e-5f, y_g.view(), mean_g.view(),
                           rstd_g.view());
    expect_close(y_g.download(*gpu).floats(), y.floats(), bounds.y.rtol, bounds.y.atol, what + " y");
    expect_close(mean_g.download(*gpu).floats(), mean.floats(), bounds.mean.rtol, bounds.mean.atol,
                 what + " mean");
    expect_close(rstd_g.download(*gpu).floats(), rstd.floats(), bounds.rstd.rtol, bounds.rstd.atol,
                 what + " rstd");
    for (bool accumulate_dx : accumulate) {
      HostTensor dy = HostTensor::of(random_floats(rows * cols, 4), DType::f32, {rows, cols});
      HostTensor dx = HostTensor::of(random_floats(rows * cols, 5), DType::f32, {rows, cols});
      HostTensor dgamma = HostTensor::of(random_floats(cols, 6), DType::f32, {cols});
      HostTensor dbeta = HostTensor::of(random_floats(cols, 7), DType::f32, {cols});
      DeviceTensor dy_g = upload(dy), dx_g = upload(dx), dgamma_g = upload(dgamma), dbeta_g = upload(dbeta);
      cpu.layernorm_backward(dy.view(), x.view(), gamma.view(), mean.view(), rstd.view(), dx.view(),
                             dgamma.view(), dbeta.view(), accumulate_dx);
      gpu->layernorm_backward(dy_g.view(), x_g.view(), gamma_g.view(), mean_g.view(), rstd_g.view(),
                              dx_g.view(), dgamma_g.view(), dbeta_g.view(), accumulate_dx);
      expect_close(dx_g.download(*gpu).floats(), dx.floats(), bounds.dx.rtol, bounds.dx.atol, what + " dx");
      expect_close(dgamma_g.download(*gpu).floats(), dgamma.floats(), bounds.dgamma.rtol, bounds.dgamma.atol,
                   what + " dgamma");
      expect_close(dbeta_g.download(*gpu).floats(), dbeta.floats(), bounds.dbeta.rtol, bounds.dbeta.atol,
                   what + " dbeta");
    }
  }
};

TEST_F(NormalizationTest, LayerNormForwardAndBackward) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (int64_t cols : {int64_t{37}, int64_t{771}}) {
      const LayerNormBounds bounds{{rtol_for(dtype), 1e-4 + atol_for(dtype)},
                                   {1e-5, 1e-5},
                                   {1e-4, 1e-5},
                                   {1e-4, 1e-4},
                                   {1e-4, 1e-3},
                                   {1e-4, 1e-3}};
      compare_layernorm(131, cols, dtype, {false, true}, bounds,
                        std::string("layernorm ") + loom::dtype_name(dtype) + " C=" + std::to_string(cols));
    }
}

TEST_F(NormalizationTest, LayerNormAtProductionSize) {
  // 256 sequences × 128 tokens of BERT-large's 1,024 features: 32,768 rows, 8,192 blocks of four
  // row warps, dγ/dβ summed in 128 tiles of rows.
  //
  // Tolerances, and why: y, mean, rstd and dx are per-row results, sums of 1,024 terms in another
  // order on each side; backend/cpu's are within 2e-7 of f64 (the mean absolutely, rstd relatively,
  // y and dx past an rtol of 1e-5): rtol 1e-5, atol 1e-5 (y, dx), 1e-6 (mean), none (rstd, ~0.7).
  // A bf16 y is rounded once on each side: one bf16 ulp, rtol 2^-7. dγ/dβ sum 32,768 rows, in row
  // order on the CPU (measured up to 3e-3 off f64 for these inputs, columns up to ~450) and in
  // tiles on the GPU: residual_layernorm_test's rtol 1e-5, atol 1e-5 + 2e-7·rows (6.6e-3).
  const int64_t rows = 32768, cols = 1024;
  const double column_atol = 1e-5 + 2e-7 * rows;
  for (DType dtype : {DType::f32, DType::bf16}) {
    const LayerNormBounds bounds{{dtype == DType::f32 ? 1e-5 : std::ldexp(1.0, -7), 1e-5},
                                 {1e-5, 1e-6},
                                 {1e-5, 0},
                                 {1e-5, 1e-5},
                                 {1e-5, column_atol},
                                 {1e-5, column_atol}};
    compare_layernorm(rows, cols, dtype, {false}, bounds,
                      std::string("layernorm 32768 × 1024 ") + loom::dtype_name(dtype));
  }
}

TEST_F(NormalizationTest, LayerNormBackwardDxAliasingDy) {
  const int64_t rows = 9, cols = 771;
  HostTensor x = HostTensor::of(random_floats(rows * cols, 1), DType::f32, {rows, cols});
  HostTensor gamma = HostTensor::of(random_floats(cols, 2), DType::f32, {cols});
  HostTensor beta = HostTensor::of(random_floats(cols, 3), DType::f32, {cols});
  HostTensor y = HostTensor::zeros(DType::f32, {rows, cols});
  HostTensor mean = HostTensor::zeros(DType::f32, {rows}), rstd = HostTensor::zeros(DType::f32, {rows});
  cpu.layernorm_forward(x.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(), rstd.view());
  HostTensor dy = HostTensor::of(random_floats(rows * cols, 4), DType::f32, {rows, cols});
  HostTensor dgamma = HostTensor::zeros(DType::f32, {cols}), dbeta = HostTensor::zeros(DType::f32, {cols});
  DeviceTensor x_g = upload(x), gamma_g = upload(gamma), mean_g = upload(mean), rstd_g = upload(rstd),
               dy_g = upload(dy), dgamma_g = upload(dgamma), dbeta_g = upload(dbeta);
  HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
  cpu.layernorm_backward(dy.view(), x.view(), gamma.view(), mean.view(), rstd.view(), dx.view(),
                         dgamma.view(), dbeta.view(), false);
  gpu->layernorm_backward(dy_g.view(), x_g.view(), gamma_g.view(), mean_g.view(), rstd_g.view(), dy_g.view(),
                          dgamma_g.view(), dbeta_g.view(), false);
  expect_close(dy_g.download(*gpu).floats(), dx.floats(), 1e-4, 1e-4, "dx aliasing dy");
  expect_close(dbeta_g.download(*gpu).floats(), dbeta.floats(), 1e-4, 1e-4, "dbeta with dx aliasing dy");
}

TEST_F(NormalizationTest, AdditiveKeyMaskEveryMaskDtype) {
  const int64_t B = 3, T = 37;
  std::vector<int64_t> mask(B * T);
  for (int64_t i = 0; i < B * T; ++i) mask[i] = (i * 7) % 5 != 0 ? 1 : 0;
  for (DType dtype : {DType::i32, DType::i64, DType::f32}) {
    HostTensor m = dtype == DType::f32
                       ? HostTensor::of(std::vector<float>(mask.begin(), mask.end()), dtype, {B, T})
                       : HostTensor::ids(mask, dtype, {B, T});
    HostTensor out = HostTensor::zeros(DType::f32, {B, T});
    DeviceTensor m_g = upload(m), out_g = upload(out);
    cpu.additive_key_mask(m.view(), out.view());
    gpu->additive_key_mask(m_g.view(), out_g.view());
    expect_equal(out_g.download(*gpu).floats(), out.floats(), loom::dtype_name(dtype));
  }
}

TEST_F(NormalizationTest, SoftmaxWithMaskScaleAndAllMaskedRows) {
  const int64_t B = 2, H = 3, T = 37;
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t t = 20; t < T; ++t) mask[t] = loom::kMaskedKey;     // batch 0: padding
  for (int64_t t = 0; t < T; ++t) mask[T + t] = loom::kMaskedKey;  // batch 1: every key masked
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  DeviceTensor key_mask_g = upload(key_mask);
  for (DType in : {DType::f32, DType::bf16})
    for (DType out : {DType::f32, DType::bf16}) {
      const std::string what = std::string("softmax ") + loom::dtype_name(in) + "→" + loom::dtype_name(out);
      HostTensor scores = HostTensor::of(random_floats(B * H * T * T, 1, -5.0f, 5.0f), in, {B, H, T, T});
      HostTensor probs = HostTensor::zeros(out, {B, H, T, T});
      DeviceTensor scores_g = upload(scores), probs_g = upload(probs);
      cpu.softmax_forward(scores.view(), key_mask.view(), 0.125f, probs.view());
      gpu->softmax_forward(scores_g.view(), key_mask_g.view(), 0.125f, probs_g.view());
      expect_close(probs_g.download(*gpu).floats(), probs.floats(), rtol_for(out), 1e-6 + atol_for(out) / 10,
                   what);
      // Without a mask, any shape: rows are the last dim.
      cpu.softmax_forward(scores.view(), loom::Tensor{}, 1.0f, probs.view());
      gpu->softmax_forward(scores_g.view(), loom::Tensor{}, 1.0f, probs_g.view());
      expect_close(probs_g.download(*gpu).floats(), probs.floats(), rtol_for(out), 1e-6 + atol_for(out) / 10,
                   what + " unmasked");

      HostTensor dprobs = HostTensor::of(random_floats(B * H * T * T, 2), DType::f32, {B, H, T, T});
      HostTensor dscores = HostTensor::zeros(DType::f32, {B, H, T, T});
      DeviceTensor dprobs_g = upload(dprobs), dscores_g = upload(dscores);
      cpu.softmax_backward(dprobs.view(), probs.view(), 0.125f, dscores.view());
      gpu->softmax_backward(dprobs_g.view(), probs_g.view(), 0.125f, dscores_g.view());
      expect_close(dscores_g.download(*gpu).floats(), dscores.floats(), 1e-4, 1e-5, what + " backward");
      // dscores aliasing dprobs.
      gpu->softmax_backward(dprobs_g.view(), probs_g.view(), 0.125f, dprobs_g.view());
      expect_close(dprobs_g.download(*gpu).floats(), dscores.floats(), 1e-4, 1e-5,
                   what + " backward in place");
    }
}

TEST_F(NormalizationTest, SoftmaxOverProductionAttentionRows) {
  // The attention probabilities of 256 sequences × 16 heads × 128 queries: 524,288 rows of 128
  // keys, 131,072 blocks, each sequence padded to its own length (every length from 1 to 128), bf16
  // in and out as in mixed precision.
  //
  // Tolerances, and why: forward, both sides round one f32 probability (~1e-6 apart) to bf16: one
  // bf16 ulp, rtol 2^-7, and masked keys exactly 0. Backward reads the same bf16 probabilities on
  // both sides (the CPU's), so dscores = scale·p·(dp − Σ dp·p) differs only by the order of the
  // row's dot product: backend/cpu's is within 1e-8 of f64: rtol 1e-5, atol 1e-7 (the values are
  // mostly 1e-4 to 1e-2).
  const int64_t B = 256, H = 16, T = 128;
  const float scale = 0.125f;
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T - (37 * b + 5) % T; t < T; ++t) mask[b * T + t] = loom::kMaskedKey;
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  HostTensor scores =
      HostTensor::of(random_floats(B * H * T * T, 1, -16.0f, 16.0f), DType::bf16, {B, H, T, T});
  HostTensor probs = HostTensor::zeros(DType::bf16, {B, H, T, T});
  DeviceTensor key_mask_g = upload(key_mask), scores_g = upload(scores), probs_g = upload(probs);
  cpu.softmax_forward(scores.view(), key_mask.view(), scale, probs.view());
  gpu->softmax_forward(scores_g.view(), key_mask_g.view(), scale, probs_g.view());
  expect_close(probs_g.download(*gpu).floats(), probs.floats(), std::ldexp(1.0, -7), 0,
               "softmax bf16 → bf16, 524288 rows of 128");

  HostTensor dprobs = HostTensor::of(random_floats(B * H * T * T, 2), DType::f32, {B, H, T, T});
  HostTensor dscores = HostTensor::zeros(DType::f32, {B, H, T, T});
  DeviceTensor cpu_probs_g = upload(probs), dprobs_g = upload(dprobs), dscores_g = upload(dscores);
  cpu.softmax_backward(dprobs.view(), probs.view(), scale, dscores.view());
  gpu->softmax_backward(dprobs_g.view(), cpu_probs_g.view(), scale, dscores_g.view());
  expect_close(dscores_g.download(*gpu).floats(), dscores.floats(), 1e-5, 1e-7,
               "softmax backward, 524288 rows of 128");
}

TEST_F(NormalizationTest, SoftmaxInPlaceLongRows) {
  const int64_t rows = 5, cols = 768 + 3;
  HostTensor scores = HostTensor::of(random_floats(rows * cols, 3, -10.0f, 10.0f), DType::f32, {rows, cols});
  HostTensor probs = HostTensor::zeros(DType::f32, {rows, cols});
  DeviceTensor scores_g = upload(scores);
  cpu.softmax_forward(scores.view(), loom::Tensor{}, 0.5f, probs.view());
  gpu->softmax_forward(scores_g.view(), loom::Tensor{}, 0.5f, scores_g.view());
  expect_close(scores_g.download(*gpu).floats(), probs.floats(), 1e-5, 1e-7, "softmax in place");
}

}  // namespace
}  // namespace loom_cuda_test
