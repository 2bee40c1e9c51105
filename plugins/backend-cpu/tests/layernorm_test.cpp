// layernorm forward/backward against a double-precision reference and finite differences;
// accumulation contract; bf16 input agrees with f32.
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

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

TEST(LayerNorm, ForwardAndBackwardMatchDoubleReference) {
  const int64_t B = 3, T = 7, C = 24;
  const int64_t rows = B * T;
  const double eps = 1e-12;
  auto x = random_floats(rows * C, 21, -2, 2), gamma = random_floats(C, 22, 0.5, 1.5),
       beta = random_floats(C, 23);
  auto w = random_floats(rows * C, 24);
  std::vector<float> y(rows * C), mean(rows), rstd(rows);
  backend().layernorm_forward(view(x, {B, T, C}), view(gamma, {C}), view(beta, {C}), static_cast<float>(eps),
                              view(y, {B, T, C}), view(mean, {rows}), view(rstd, {rows}));
  const auto xd = to_double(x), gd = to_double(gamma), bd = to_double(beta);
  expect_close(y, reference_layernorm(xd, gd, bd, rows, C, eps), 1e-5, 1e-5, "y");

  // dx overwrite and accumulate, dgamma/dbeta accumulate onto prior content.
  std::vector<float> dx(rows * C, 7.0f), dx_acc(rows * C, 0.5f), dgamma(C, 1.0f), dbeta(C, -1.0f);
  backend().layernorm_backward(view(w, {B, T, C}), view(x, {B, T, C}), view(gamma, {C}), view(mean, {rows}),
                               view(rstd, {rows}), view(dx, {B, T, C}), view(dgamma, {C}), view(dbeta, {C}),
                               false);
  std::vector<float> dg2(C), db2(C);
  backend().layernorm_backward(view(w, {B, T, C}), view(x, {B, T, C}), view(gamma, {C}), view(mean, {rows}),
                               view(rstd, {rows}), view(dx_acc, {B, T, C}), view(dg2, {C}), view(db2, {C}),
                               true);
  auto dx_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_layernorm(v, gd, bd, rows, C, eps), w); }, xd, 1e-5);
  auto dg_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_layernorm(xd, v, bd, rows, C, eps), w); }, gd, 1e-5);
  auto db_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_layernorm(xd, gd, v, rows, C, eps), w); }, bd, 1e-5);
  expect_close(dx, dx_expected, 1e-3, 1e-4, "dx");
  std::vector<double> dx_acc_expected(dx_expected);
  for (auto& v : dx_acc_expected) v += 0.5;
  expect_close(dx_acc, dx_acc_expected, 1e-3, 1e-4, "dx accumulated");
  expect_close(dg2, dg_expected, 1e-4, 1e-4, "dgamma");
  expect_close(db2, db_expected, 1e-4, 1e-4, "dbeta");
  for (auto& v : dg_expected) v += 1.0;
  for (auto& v : db_expected) v -= 1.0;
  expect_close(dgamma, dg_expected, 1e-4, 1e-4, "dgamma accumulated");
  expect_close(dbeta, db_expected, 1e-4, 1e-4, "dbeta accumulated");
}

TEST(LayerNorm, DxMayAliasDy) {
  const int64_t rows = 5, C = 13;
  auto x = random_floats(rows * C, 25), gamma = random_floats(C, 26), beta = random_floats(C, 27);
  auto dy = random_floats(rows * C, 28);
  std::vector<float> y(rows * C), mean(rows), rstd(rows), dx(rows * C), dg(C), db(C), dg2(C), db2(C);
  backend().layernorm_forward(view(x, {rows, C}), view(gamma, {C}), view(beta, {C}), 1e-5f,
                              view(y, {rows, C}), view(mean, {rows}), view(rstd, {rows}));
  backend().layernorm_backward(view(dy, {rows, C}), view(x, {rows, C}), view(gamma, {C}), view(mean, {rows}),
                               view(rstd, {rows}), view(dx, {rows, C}), view(dg, {C}), view(db, {C}), false);
  backend().layernorm_backward(view(dy, {rows, C}), view(x, {rows, C}), view(gamma, {C}), view(mean, {rows}),
                               view(rstd, {rows}), view(dy, {rows, C}), view(dg2, {C}), view(db2, {C}),
                               false);
  EXPECT_EQ(dy, dx);
  EXPECT_EQ(dg, dg2);
  EXPECT_EQ(db, db2);
}

TEST(LayerNorm, Bf16InputAndOutputAgreeWithF32) {
  // bf16 x is the f32 x rounded; statistics are f32, so y differs from the f32 result only by the
  // input rounding (≤ 2^-9 relative, amplified by rstd·gamma ≈ 1) plus the output rounding (2^-9).
  const int64_t rows = 9, C = 40;
  auto x = random_floats(rows * C, 29, -3, 3), gamma = random_floats(C, 30, 0.5, 1.5),
       beta = random_floats(C, 31);
  auto x16 = to_bf16(x);
  auto xr = from_bf16(x16);
  std::vector<float> y(rows * C), mean(rows), rstd(rows), y_from16(rows * C), mean16(rows), rstd16(rows);
  std::vector<loom::BFloat16> y16(rows * C);
  backend().layernorm_forward(view(xr, {rows, C}), view(gamma, {C}), view(beta, {C}), 1e-5f,
                              view(y, {rows, C}), view(mean, {rows}), view(rstd, {rows}));
  backend().layernorm_forward(view(x16, {rows, C}), view(gamma, {C}), view(beta, {C}), 1e-5f,
                              view(y_from16, {rows, C}), view(mean16, {rows}), view(rstd16, {rows}));
  expect_close(y_from16, y, 1e-6, 1e-6, "bf16 x (exactly representable) vs f32");
  backend().layernorm_forward(view(x16, {rows, C}), view(gamma, {C}), view(beta, {C}), 1e-5f,
                              view(y16, {rows, C}), view(mean16, {rows}), view(rstd16, {rows}));
  expect_close(from_bf16(y16), y, 1.0 / 256, 1e-6, "bf16 output vs f32");
  std::vector<float> y_unrounded(rows * C);
  backend().layernorm_forward(view(x, {rows, C}), view(gamma, {C}), view(beta, {C}), 1e-5f,
                              view(y_unrounded, {rows, C}), view(mean, {rows}), view(rstd, {rows}));
  expect_close(from_bf16(y16), y_unrounded, 0.02, 0.02, "bf16 pipeline vs pure f32");
}

TEST(LayerNorm, WrongGammaShapeNamesTheArgument) {
  std::vector<float> x(24), gamma(23), beta(24), y(24), mean(1), rstd(1);
  try {
    backend().layernorm_forward(view(x, {1, 24}), view(gamma, {23}), view(beta, {24}), 1e-5f,
                                view(y, {1, 24}), view(mean, {1}), view(rstd, {1}));
    FAIL() << "expected an error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("layernorm_forward: gamma is f32[23], expected [24]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
