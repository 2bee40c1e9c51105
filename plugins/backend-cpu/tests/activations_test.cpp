// bias+GELU (erf, tanh), tanh, bias_add/bias_grad (with a period), add and axpby against double
// references and finite differences; bf16 GELU agrees with f32.
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

double gelu(double v, loom::Gelu variant) {
  if (variant == loom::Gelu::erf) return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

std::vector<double> reference_bias_gelu(const std::vector<double>& x, const std::vector<double>& bias,
                                        int64_t cols, loom::Gelu variant) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = gelu(x[i] + (bias.empty() ? 0.0 : bias[i % cols]), variant);
  return y;
}

class BiasGelu : public ::testing::TestWithParam<loom::Gelu> {};

TEST_P(BiasGelu, ForwardAndBackwardMatchDoubleReference) {
  const loom::Gelu variant = GetParam();
  const int64_t rows = 9, C = 19;
  auto x = random_floats(rows * C, 51, -4, 4), bias = random_floats(C, 52), w = random_floats(rows * C, 53);
  std::vector<float> y(rows * C), dx(rows * C), dbias(C, 0.5f);
  backend().bias_gelu_forward(view(x, {rows, C}), view(bias, {C}), view(y, {rows, C}), variant);
  const auto xd = to_double(x), bd = to_double(bias);
  expect_close(y, reference_bias_gelu(xd, bd, C, variant), 1e-5, 1e-6, "y");
  backend().bias_gelu_backward(view(w, {rows, C}), view(x, {rows, C}), view(bias, {C}), view(dx, {rows, C}),
                               view(dbias, {C}), variant);
  expect_close(
      dx,
      numeric_gradient([&](const auto& v) { return weighted_sum(reference_bias_gelu(v, bd, C, variant), w); },
                       xd),
      1e-4, 1e-5, "dx");
  auto db_expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_bias_gelu(xd, v, C, variant), w); }, bd);
  for (auto& v : db_expected) v += 0.5;  // accumulated onto the prior content
  expect_close(dbias, db_expected, 1e-4, 1e-5, "dbias accumulated");

  // Without bias: plain GELU, and dx may alias dy.
  std::vector<float> y0(rows * C), g = w;
  backend().bias_gelu_forward(view(x, {rows, C}), loom::Tensor{}, view(y0, {rows, C}), variant);
  expect_close(y0, reference_bias_gelu(xd, {}, C, variant), 1e-5, 1e-6, "plain gelu");
  backend().bias_gelu_backward(view(g, {rows, C}), view(x, {rows, C}), loom::Tensor{}, view(g, {rows, C}),
                               loom::Tensor{}, variant);
  expect_close(
      g,
      numeric_gradient([&](const auto& v) { return weighted_sum(reference_bias_gelu(v, {}, C, variant), w); },
                       xd),
      1e-4, 1e-5, "plain gelu dx in place");
}

TEST_P(BiasGelu, Bf16InputAndOutputAgreeWithF32) {
  const loom::Gelu variant = GetParam();
  const int64_t rows = 6, C = 33;
  auto x = random_floats(rows * C, 54, -3, 3), bias = random_floats(C, 55);
  auto x16 = to_bf16(x);
  auto xr = from_bf16(x16);
  std::vector<float> y(rows * C);
  std::vector<loom::BFloat16> y16(rows * C);
  backend().bias_gelu_forward(view(xr, {rows, C}), view(bias, {C}), view(y, {rows, C}), variant);
  backend().bias_gelu_forward(view(x16, {rows, C}), view(bias, {C}), view(y16, {rows, C}), variant);
  expect_close(from_bf16(y16), y, 1.0 / 256, 1e-6, "bf16 gelu: one output rounding");
  auto dy = random_floats(rows * C, 56);
  std::vector<float> dx(rows * C), dx16(rows * C);
  backend().bias_gelu_backward(view(dy, {rows, C}), view(xr, {rows, C}), view(bias, {C}), view(dx, {rows, C}),
                               loom::Tensor{}, variant);
  backend().bias_gelu_backward(view(dy, {rows, C}), view(x16, {rows, C}), view(bias, {C}),
                               view(dx16, {rows, C}), loom::Tensor{}, variant);
  expect_close(dx16, dx, 1e-6, 1e-7, "bf16 saved input (same values)");
}

INSTANTIATE_TEST_SUITE_P(Variants, BiasGelu, ::testing::Values(loom::Gelu::erf, loom::Gelu::tanh));

TEST(Tanh, ForwardAndBackwardMatchFiniteDifferences) {
  const int64_t n = 29;
  auto x = random_floats(n, 57, -3, 3), w = random_floats(n, 58);
  std::vector<float> y(n), dx(n);
  backend().tanh_forward(view(x, {n}), view(y, {n}));
  const auto xd = to_double(x);
  const auto ref = [&](const std::vector<double>& v) {
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = std::tanh(v[i]);
    return out;
  };
  expect_close(y, ref(xd), 1e-6, 1e-7, "tanh");
  backend().tanh_backward(view(w, {n}), view(y, {n}), view(dx, {n}));
  expect_close(dx, numeric_gradient([&](const auto& v) { return weighted_sum(ref(v), w); }, xd), 1e-5, 1e-6,
               "dx");
}

TEST(BiasAdd, PeriodicBiasAddsPositionRowsAndGradientSumsThem) {
  // x [B, T, C] += wpe[0:T]: bias_add with a [T, C] bias; its gradient is bias_grad with [T, C].
  const int64_t B = 3, T = 5, C = 7;
  auto x = random_floats(B * T * C, 59), wpe = random_floats(T * C, 60), dy = random_floats(B * T * C, 61);
  auto expected = to_double(x);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) expected[(b * T + t) * C + c] += wpe[t * C + c];
  backend().bias_add(view(x, {B, T, C}), view(wpe, {T, C}));
  expect_close(x, expected, 1e-7, 1e-7, "x + wpe");
  std::vector<float> dwpe(T * C, 1.0f), dbias(C, 0.0f);
  backend().bias_grad(view(dy, {B, T, C}), view(dwpe, {T, C}));
  backend().bias_grad(view(dy, {B, T, C}), view(dbias, {C}));
  std::vector<double> dwpe_expected(T * C, 1.0), dbias_expected(C, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        dwpe_expected[t * C + c] += dy[(b * T + t) * C + c];
        dbias_expected[c] += dy[(b * T + t) * C + c];
      }
  expect_close(dwpe, dwpe_expected, 1e-6, 1e-6, "dwpe accumulated");
  expect_close(dbias, dbias_expected, 1e-6, 1e-6, "column sums");
}

TEST(Residual, AddAndAxpby) {
  const int64_t n = 40;
  auto a = random_floats(n, 62), b = random_floats(n, 63);
  std::vector<float> out(n);
  backend().add(view(a, {n}), view(b, {n}), view(out, {n}));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], a[i] + b[i]);
  auto b16 = to_bf16(b);
  std::vector<loom::BFloat16> out16(n);
  backend().add(view(a, {n}), view(b16, {n}), view(out16, {n}));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out16[i].bits, loom::to_bf16(a[i] + loom::to_f32(b16[i])).bits);
  auto y = b;
  backend().axpby(2.0f, view(a, {n}), -0.5f, view(y, {n}));
  for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(y[i], 2.0f * a[i] - 0.5f * b[i]);
  std::vector<float> nan_y(n, NAN);
  backend().axpby(3.0f, view(a, {n}), 0.0f, view(nan_y, {n}));
  for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(nan_y[i], 3.0f * a[i]);
}

}  // namespace
