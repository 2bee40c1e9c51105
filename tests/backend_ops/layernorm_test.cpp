// LayerNorm forward and backward: against a float64 reference and central differences (dx
// overwritten or accumulated, dγ and dβ accumulated), dx aliasing dy, 16-bit inputs and outputs
// against f32, a wrong γ named; against the reference backend for every storage at odd sizes and
// at production size (32,768 rows of 1,024: 256 sequences × 128 tokens of BERT-large).
#include "backend_op_case.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(LayerNorm);

std::vector<double> reference_layernorm(const std::vector<double>& x, const std::vector<double>& gamma,
                                        const std::vector<double>& beta, int64_t rows, int64_t cols,
                                        double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = (x[r * cols + c] - mean) / std::sqrt(var + eps) * gamma[c] + beta[c];
  }
  return y;
}

/// The tensors of one LayerNorm on the backend under test.
struct LayerNormTensors {
  DeviceTensor x, gamma, beta, y, mean, rstd;
};

TEST_P(LayerNorm, ForwardAndBackwardMatchFloat64Reference) {
  const int64_t B = 3, T = 7, C = 24, rows = B * T;
  const double eps = 1e-12;
  const auto x = random_floats(rows * C, 21, -2, 2), gamma = random_floats(C, 22, 0.5, 1.5),
             beta = random_floats(C, 23), w = random_floats(rows * C, 24);
  DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {B, T, C})),
               gamma_dev = upload(HostTensor::of(gamma, DType::f32, {C})),
               beta_dev = upload(HostTensor::of(beta, DType::f32, {C})),
               y = upload_zeros(DType::f32, {B, T, C}), mean = upload_zeros(DType::f32, {rows}),
               rstd = upload_zeros(DType::f32, {rows}),
               w_dev = upload(HostTensor::of(w, DType::f32, {B, T, C}));
  backend().layernorm_forward(x_dev.view(), gamma_dev.view(), beta_dev.view(), static_cast<float>(eps),
                              y.view(), mean.view(), rstd.view());
  const auto xd = to_double(x), gd = to_double(gamma), bd = to_double(beta);
  expect_close(read(y), reference_layernorm(xd, gd, bd, rows, C, eps),
               for_this_backend(kRowStatisticsAgainstFloat64, DType::f32), "y");

  // dx overwritten and accumulated; dγ, dβ accumulated onto prior content.
  const auto filled = [&](std::vector<int64_t> shape, float value) {
    return upload(HostTensor::of(
        std::vector<float>(static_cast<size_t>(HostTensor::zeros(DType::f32, shape).numel()), value),
        DType::f32, shape));
  };
  DeviceTensor dx = filled({B, T, C}, 7.0f), dx_acc = filled({B, T, C}, 0.5f), dgamma = filled({C}, 1.0f),
               dbeta = filled({C}, -1.0f), dg2 = upload_zeros(DType::f32, {C}),
               db2 = upload_zeros(DType::f32, {C});
  backend().layernorm_backward(w_dev.view(), x_dev.view(), gamma_dev.view(), mean.view(), rstd.view(),
                               dx.view(), dgamma.view(), dbeta.view(), false);
  backend().layernorm_backward(w_dev.view(), x_dev.view(), gamma_dev.view(), mean.view(), rstd.view(),
                               dx_acc.view(), dg2.view(), db2.view(), true);
  const auto dx_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_layernorm(v, gd, bd, rows, C, eps), w); }, xd, 1e-5);
  const auto dg_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_layernorm(xd, v, bd, rows, C, eps), w); }, gd, 1e-5);
  const auto db_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_layernorm(xd, gd, v, rows, C, eps), w); }, bd, 1e-5);
  const Tolerance input_gradient = for_this_backend(kNormalisedInputGradient, DType::f32),
                  parameter_gradient = for_this_backend(kNormalisedParameterGradient, DType::f32);
  expect_close(read(dx), dx_expected, input_gradient, "dx");
  expect_close(read(dx_acc), plus(dx_expected, 0.5), input_gradient, "dx accumulated onto 0.5");
  expect_close(read(dg2), dg_expected, parameter_gradient, "dgamma");
  expect_close(read(db2), db_expected, parameter_gradient, "dbeta");
  expect_close(read(dgamma), plus(dg_expected, 1.0), parameter_gradient, "dgamma accumulated onto 1");
  expect_close(read(dbeta), plus(db_expected, -1.0), parameter_gradient, "dbeta accumulated onto -1");
}

TEST_P(LayerNorm, DxMayAliasDy) {
  const int64_t rows = 5, C = 13;
  const HostTensor dy = HostTensor::of(random_floats(rows * C, 28), DType::f32, {rows, C});
  DeviceTensor x = upload(HostTensor::of(random_floats(rows * C, 25), DType::f32, {rows, C})),
               gamma = upload(HostTensor::of(random_floats(C, 26), DType::f32, {C})),
               beta = upload(HostTensor::of(random_floats(C, 27), DType::f32, {C})),
               y = upload_zeros(DType::f32, {rows, C}), mean = upload_zeros(DType::f32, {rows}),
               rstd = upload_zeros(DType::f32, {rows}), dy_dev = upload(dy),
               dx = upload_zeros(DType::f32, {rows, C}), dg = upload_zeros(DType::f32, {C}),
               db = upload_zeros(DType::f32, {C}), dg2 = upload_zeros(DType::f32, {C}),
               db2 = upload_zeros(DType::f32, {C});
  backend().layernorm_forward(x.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(), rstd.view());
  backend().layernorm_backward(dy_dev.view(), x.view(), gamma.view(), mean.view(), rstd.view(), dx.view(),
                               dg.view(), db.view(), false);
  backend().layernorm_backward(dy_dev.view(), x.view(), gamma.view(), mean.view(), rstd.view(), dy_dev.view(),
                               dg2.view(), db2.view(), false);
  EXPECT_EQ(read(dy_dev), read(dx));
  EXPECT_EQ(read(dg), read(dg2));
  EXPECT_EQ(read(db), read(db2));
}

TEST_P(LayerNorm, SixteenBitInputsAndOutputsAgainstF32) {
  // bf16 x is the f32 x rounded; statistics are f32, so y differs from the f32 result only by the
  // input rounding (≤ 2^-9 relative, amplified by rstd·γ ≈ 1) plus the output rounding (2^-9).
  const int64_t rows = 9, C = 40;
  const auto x = random_floats(rows * C, 29, -3, 3);
  const HostTensor x16 = HostTensor::of(x, DType::bf16, {rows, C});
  DeviceTensor x16_dev = upload(x16), xr = upload(HostTensor::of(x16.floats(), DType::f32, {rows, C})),
               x_dev = upload(HostTensor::of(x, DType::f32, {rows, C})),
               gamma = upload(HostTensor::of(random_floats(C, 30, 0.5, 1.5), DType::f32, {C})),
               beta = upload(HostTensor::of(random_floats(C, 31), DType::f32, {C})),
               y = upload_zeros(DType::f32, {rows, C}), y_from16 = upload_zeros(DType::f32, {rows, C}),
               y16 = upload_zeros(DType::bf16, {rows, C}), y_unrounded = upload_zeros(DType::f32, {rows, C}),
               mean = upload_zeros(DType::f32, {rows}), rstd = upload_zeros(DType::f32, {rows});
  backend().layernorm_forward(xr.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(),
                              rstd.view());
  backend().layernorm_forward(x16_dev.view(), gamma.view(), beta.view(), 1e-5f, y_from16.view(), mean.view(),
                              rstd.view());
  expect_close(read(y_from16), read(y), for_this_backend(kRowStatisticsSameValuesOtherStorage, DType::f32),
               "bf16 x (the same values) against f32");
  backend().layernorm_forward(x16_dev.view(), gamma.view(), beta.view(), 1e-5f, y16.view(), mean.view(),
                              rstd.view());
  expect_close(read(y16), read(y), for_this_backend(one_rounding(DType::bf16, 1e-6), DType::bf16),
               "bf16 output against f32");
  backend().layernorm_forward(x_dev.view(), gamma.view(), beta.view(), 1e-5f, y_unrounded.view(), mean.view(),
                              rstd.view());
  expect_close(read(y16), read(y_unrounded), for_this_backend(kBf16InputAndOutput, DType::bf16),
               "bf16 pipeline against pure f32");

  // f16 storage: the f32 result of the same values rounded once.
  const int64_t r = 6, cols = 40;
  const HostTensor h16 = HostTensor::of(random_floats(r * cols, 27, -3.0f, 3.0f), DType::f16, {r, cols});
  DeviceTensor h16_dev = upload(h16), h = upload(HostTensor::of(h16.floats(), DType::f32, {r, cols})),
               g = upload(HostTensor::of(random_floats(cols, 28, 0.5f, 1.5f), DType::f32, {cols})),
               b = upload(HostTensor::of(random_floats(cols, 29), DType::f32, {cols})),
               out = upload_zeros(DType::f32, {r, cols}), out16 = upload_zeros(DType::f16, {r, cols}),
               m = upload_zeros(DType::f32, {r}), s = upload_zeros(DType::f32, {r});
  backend().layernorm_forward(h.view(), g.view(), b.view(), 1e-12f, out.view(), m.view(), s.view());
  backend().layernorm_forward(h16_dev.view(), g.view(), b.view(), 1e-12f, out16.view(), m.view(), s.view());
  const HostTensor rounded = HostTensor::of(read(out), DType::f16, {r, cols});
  if (runs_reference_code())
    expect_same_bits(out16.download(), rounded, "f16 output: the f32 result rounded once");
  else
    expect_close(read(out16), rounded.floats(), for_this_backend(one_rounding(DType::f16), DType::f16),
                 "f16 output: the f32 result rounded once");
}

TEST_P(LayerNorm, WrongGammaShapeNamesTheArgument) {
  DeviceTensor x = upload_zeros(DType::f32, {1, 24}), gamma = upload_zeros(DType::f32, {23}),
               beta = upload_zeros(DType::f32, {24}), y = upload_zeros(DType::f32, {1, 24}),
               mean = upload_zeros(DType::f32, {1}), rstd = upload_zeros(DType::f32, {1});
  expect_error_naming(
      [&] {
        backend().layernorm_forward(x.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(),
                                    rstd.view());
      },
      {"layernorm_forward: gamma is f32[23], expected [24]"});
}

/// How closely each output of a LayerNorm comparison with the reference must agree.
struct LayerNormBounds {
  Tolerance y, mean, rstd, dx, dgamma, dbeta;
};

/// layernorm_forward, then layernorm_backward once per `accumulate` value, on random data of
/// rows × cols (x in `dtype`) on the backend under test and the reference; every output compared.
void compare_with_reference(loom::Backend& backend, loom::Backend& reference, int64_t rows, int64_t cols,
                            DType dtype, std::initializer_list<bool> accumulate,
                            const LayerNormBounds& bounds, const std::string& what) {
  HostTensor x = HostTensor::of(random_floats(rows * cols, 1, -2.0f, 3.0f), dtype, {rows, cols});
  HostTensor gamma = HostTensor::of(random_floats(cols, 2, 0.5f, 1.5f), DType::f32, {cols});
  HostTensor beta = HostTensor::of(random_floats(cols, 3), DType::f32, {cols});
  HostTensor y = HostTensor::zeros(dtype, {rows, cols});
  HostTensor mean = HostTensor::zeros(DType::f32, {rows}), rstd = HostTensor::zeros(DType::f32, {rows});
  DeviceTensor x_dev(backend, x), gamma_dev(backend, gamma), beta_dev(backend, beta), y_dev(backend, y),
      mean_dev(backend, mean), rstd_dev(backend, rstd);
  reference.layernorm_forward(x.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(), rstd.view());
  backend.layernorm_forward(x_dev.view(), gamma_dev.view(), beta_dev.view(), 1e-5f, y_dev.view(),
                            mean_dev.view(), rstd_dev.view());
  expect_close(y_dev.floats(), y.floats(), bounds.y, what + " y");
  expect_close(mean_dev.floats(), mean.floats(), bounds.mean, what + " mean");
  expect_close(rstd_dev.floats(), rstd.floats(), bounds.rstd, what + " rstd");
  for (bool accumulate_dx : accumulate) {
    HostTensor dy = HostTensor::of(random_floats(rows * cols, 4), DType::f32, {rows, cols});
    HostTensor dx = HostTensor::of(random_floats(rows * cols, 5), DType::f32, {rows, cols});
    HostTensor dgamma = HostTensor::of(random_floats(cols, 6), DType::f32, {cols});
    HostTensor dbeta = HostTensor::of(random_floats(cols, 7), DType::f32, {cols});
    DeviceTensor dy_dev(backend, dy), dx_dev(backend, dx), dgamma_dev(backend, dgamma),
        dbeta_dev(backend, dbeta);
    reference.layernorm_backward(dy.view(), x.view(), gamma.view(), mean.view(), rstd.view(), dx.view(),
                                 dgamma.view(), dbeta.view(), accumulate_dx);
    backend.layernorm_backward(dy_dev.view(), x_dev.view(), gamma_dev.view(), mean_dev.view(),
                               rstd_dev.view(), dx_dev.view(), dgamma_dev.view(), dbeta_dev.view(),
                               accumulate_dx);
    const std::string pass = what + (accumulate_dx ? " (dx accumulated)" : "");
    expect_close(dx_dev.floats(), dx.floats(), bounds.dx, pass + " dx");
    expect_close(dgamma_dev.floats(), dgamma.floats(), bounds.dgamma, pass + " dgamma");
    expect_close(dbeta_dev.floats(), dbeta.floats(), bounds.dbeta, pass + " dbeta");
  }
}

TEST_P(LayerNorm, ForwardAndBackwardEveryStorageAsTheReference) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (int64_t cols : {int64_t{37}, int64_t{771}}) {
      const LayerNormBounds bounds{normalised_across_implementations(dtype),
                                   kRowMeanAcrossImplementations,
                                   kRowRstdAcrossImplementations,
                                   kRowGradientAcrossImplementations,
                                   kParameterGradientAcrossImplementations,
                                   kParameterGradientAcrossImplementations};
      compare_with_reference(
          backend(), reference(), 131, cols, dtype, {false, true}, bounds,
          std::string("layernorm ") + loom::dtype_name(dtype) + " C=" + std::to_string(cols));
    }
}

TEST_P(LayerNorm, AtProductionSizeAsTheReference) {
  // 256 sequences × 128 tokens of BERT-large's 1,024 features: 32,768 rows.
  //
  // Tolerances, and why: y, mean, rstd and dx are per-row results, sums of 1,024 terms in another
  // order on each side; backend/cpu's are within 2e-7 of float64 (the mean absolutely, rstd
  // relatively, y and dx past an rtol of 1e-5): rtol 1e-5, atol 1e-5 (y, dx), 1e-6 (mean), none
  // (rstd, ~0.7). A bf16 y is rounded once on each side: one bf16 ulp. dγ/dβ sum 32,768 rows, in
  // row order on backend/cpu (measured up to 3e-3 off float64 for these inputs, columns up to
  // ~450) and in tiles elsewhere: column_sums(rows).
  LOOM_SKIP_WHERE_REFERENCE_CODE_RUNS();
  const int64_t rows = 32768, cols = 1024;
  for (DType dtype : {DType::f32, DType::bf16}) {
    const LayerNormBounds bounds{
        dtype == DType::f32 ? kLongRowAcrossImplementations : one_ulp(DType::bf16, 1e-5),
        kLongRowMeanAcrossImplementations,
        kLongRowRstdAcrossImplementations,
        kLongRowAcrossImplementations,
        column_sums(rows),
        column_sums(rows)};
    compare_with_reference(backend(), reference(), rows, cols, dtype, {false}, bounds,
                           std::string("layernorm 32768 × 1024 ") + loom::dtype_name(dtype));
  }
}

TEST_P(LayerNorm, BackwardDxAliasingDyAsTheReference) {
  const int64_t rows = 9, cols = 771;
  HostTensor x = HostTensor::of(random_floats(rows * cols, 1), DType::f32, {rows, cols});
  HostTensor gamma = HostTensor::of(random_floats(cols, 2), DType::f32, {cols});
  HostTensor beta = HostTensor::of(random_floats(cols, 3), DType::f32, {cols});
  HostTensor y = HostTensor::zeros(DType::f32, {rows, cols});
  HostTensor mean = HostTensor::zeros(DType::f32, {rows}), rstd = HostTensor::zeros(DType::f32, {rows});
  reference().layernorm_forward(x.view(), gamma.view(), beta.view(), 1e-5f, y.view(), mean.view(),
                                rstd.view());
  HostTensor dy = HostTensor::of(random_floats(rows * cols, 4), DType::f32, {rows, cols});
  HostTensor dgamma = HostTensor::zeros(DType::f32, {cols}), dbeta = HostTensor::zeros(DType::f32, {cols});
  DeviceTensor x_dev = upload(x), gamma_dev = upload(gamma), mean_dev = upload(mean), rstd_dev = upload(rstd),
               dy_dev = upload(dy), dgamma_dev = upload(dgamma), dbeta_dev = upload(dbeta);
  HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
  reference().layernorm_backward(dy.view(), x.view(), gamma.view(), mean.view(), rstd.view(), dx.view(),
                                 dgamma.view(), dbeta.view(), false);
  backend().layernorm_backward(dy_dev.view(), x_dev.view(), gamma_dev.view(), mean_dev.view(),
                               rstd_dev.view(), dy_dev.view(), dgamma_dev.view(), dbeta_dev.view(), false);
  expect_close(read(dy_dev), dx.floats(), kRowGradientAcrossImplementations, "dx aliasing dy");
  expect_close(read(dbeta_dev), dbeta.floats(), kRowGradientAcrossImplementations,
               "dbeta with dx aliasing dy");
}

}  // namespace
}  // namespace loom_backend_ops
