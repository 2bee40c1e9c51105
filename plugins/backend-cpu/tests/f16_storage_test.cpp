// f16 (IEEE binary16) storage, the compute dtype of fp16-mixed: GEMM on widened operands equals
// the f32 GEMM of the same values (strided per-head views included); element-wise ops on f16
// inputs equal the f32 op on the f16 values, with one rounding of a f16 output.
#include "op_test_support.hpp"

namespace {

using loom::DType;
using loom::Half;
using loom::Tensor;
using namespace loom_cpu_test;

TEST(F16Gemm, EqualsF32GemmOfTheF16Values) {
  const int64_t m = 37, n = 29, k = 45;
  auto a16 = to_f16(random_floats(m * k, 21)), b16 = to_f16(random_floats(n * k, 22));
  auto ar = from_f16(a16), br = from_f16(b16);
  std::vector<float> expected(m * n), c_f32(m * n);
  backend().gemm(view(ar, {m, k}), false, view(br, {n, k}), true, view(expected, {m, n}), 1, 0);
  backend().gemm(view(a16, {m, k}), false, view(b16, {n, k}), true, view(c_f32, {m, n}), 1, 0);
  // Widening is exact and the product runs through the same f32 path: identical results.
  expect_close(c_f32, expected, 0.0, 0.0, "f16 operands, f32 output");

  std::vector<Half> c16(m * n);
  backend().gemm(view(a16, {m, k}), false, view(b16, {n, k}), true, view(c16, {m, n}), 1, 0);
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_EQ(c16[i].bits, loom::to_f16(expected[i]).bits) << "f16 output rounds once, element " << i;

  // beta = 1 reads the f16 c: c = a·bᵀ + c, rounded once.
  auto before = from_f16(c16);
  backend().gemm(view(a16, {m, k}), false, view(b16, {n, k}), true, view(c16, {m, n}), 0.5f, 1.0f);
  std::vector<float> accumulated = before;
  backend().gemm(view(ar, {m, k}), false, view(br, {n, k}), true, view(accumulated, {m, n}), 0.5f, 1.0f);
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_EQ(c16[i].bits, loom::to_f16(accumulated[i]).bits) << "beta = 1 with an f16 c, element " << i;
}

TEST(F16Gemm, StridedPerHeadViewsAndTransposes) {
  // Attention context from per-head views of a fused [B, T, 3, H, D] buffer, into a strided
  // [B, T, H, D] output, as the encoder layer calls it; plus a transposed-a weight gradient.
  const int64_t B = 2, T = 6, H = 3, D = 4;
  auto qkv16 = to_f16(random_floats(B * T * 3 * H * D, 23)),
       probs16 = to_f16(random_floats(B * H * T * T, 24));
  auto qkv = from_f16(qkv16), probs = from_f16(probs16);
  std::vector<float> ctx(B * T * H * D), ctx_from16(B * T * H * D);
  const auto per_head_v = [&](Tensor fused) { return fused.select(2, 2).permute({0, 2, 1, 3}); };
  backend().gemm(view(probs, {B, H, T, T}), false, per_head_v(view(qkv, {B, T, 3, H, D})), false,
                 view(ctx, {B, T, H, D}).permute({0, 2, 1, 3}), 1, 0);
  backend().gemm(view(probs16, {B, H, T, T}), false, per_head_v(view(qkv16, {B, T, 3, H, D})), false,
                 view(ctx_from16, {B, T, H, D}).permute({0, 2, 1, 3}), 1, 0);
  expect_close(ctx_from16, ctx, 0.0, 0.0, "per-head f16 context");

  const int64_t n = 9, in = 7, out = 5;
  auto dy16 = to_f16(random_floats(n * out, 25)), x16 = to_f16(random_floats(n * in, 26));
  auto dy = from_f16(dy16), x = from_f16(x16);
  std::vector<float> dw(out * in, 0.25f), dw_from16(out * in, 0.25f);
  backend().gemm(view(dy, {n, out}), true, view(x, {n, in}), false, view(dw, {out, in}), 1, 1);
  backend().gemm(view(dy16, {n, out}), true, view(x16, {n, in}), false, view(dw_from16, {out, in}), 1, 1);
  expect_close(dw_from16, dw, 0.0, 0.0, "dW += dyᵀ·x from f16 operands");
}

TEST(F16Gemm, MixedOperandDtypesAreRefused) {
  std::vector<Half> a(4);
  std::vector<float> b(4), c(4);
  try {
    backend().gemm(view(a, {2, 2}), false, view(b, {2, 2}), false, view(c, {2, 2}), 1, 0);
    FAIL() << "f16 × f32 accepted";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("same dtype"), std::string::npos) << e.what();
  }
  std::vector<loom::BFloat16> c_bf16(4);
  std::vector<Half> b16(4);
  EXPECT_THROW(backend().gemm(view(a, {2, 2}), false, view(b16, {2, 2}), false, view(c_bf16, {2, 2}), 1, 0),
               loom::Error);
}

TEST(F16Storage, ElementwiseOpsSeeTheF16ValuesAndRoundTheirOutputOnce) {
  const int64_t rows = 6, cols = 40;
  auto x16 = to_f16(random_floats(rows * cols, 27, -3.0f, 3.0f));
  auto x = from_f16(x16);
  std::vector<float> gamma = random_floats(cols, 28, 0.5f, 1.5f), beta = random_floats(cols, 29);
  std::vector<float> mean(rows), rstd(rows), y(rows * cols);
  std::vector<Half> y16(rows * cols);

  backend().layernorm_forward(view(x, {rows, cols}), view(gamma, {cols}), view(beta, {cols}), 1e-12f,
                              view(y, {rows, cols}), view(mean, {rows}), view(rstd, {rows}));
  backend().layernorm_forward(view(x16, {rows, cols}), view(gamma, {cols}), view(beta, {cols}), 1e-12f,
                              view(y16, {rows, cols}), view(mean, {rows}), view(rstd, {rows}));
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_EQ(y16[i].bits, loom::to_f16(y[i]).bits) << "layernorm " << i;

  backend().bias_gelu_forward(view(x, {rows, cols}), view(beta, {cols}), view(y, {rows, cols}),
                              loom::Gelu::erf);
  backend().bias_gelu_forward(view(x16, {rows, cols}), view(beta, {cols}), view(y16, {rows, cols}),
                              loom::Gelu::erf);
  // erf comes from a vectorised libm whose lanes may differ from the f32 loop's by an f32 ulp,
  // which can tip the f16 rounding: one f16 ulp (2^-10 relative).
  expect_close(from_f16(y16), y, 1.0 / 1024, 1e-7, "bias + GELU, one f16 rounding");

  const Tensor scores = view(x, {1, 1, rows, cols}), scores16 = view(x16, {1, 1, rows, cols});
  std::vector<float> key_mask(cols, 0.0f);
  key_mask[cols - 1] = -10000.0f;
  backend().softmax_forward(scores, view(key_mask, {1, cols}), 0.5f, view(y, {1, 1, rows, cols}));
  backend().softmax_forward(scores16, view(key_mask, {1, cols}), 0.5f, view(y16, {1, 1, rows, cols}));
  expect_close(from_f16(y16), y, 1.0 / 1024, 1e-7, "softmax probabilities, one f16 rounding");

  std::vector<Half> sum16(rows * cols);
  backend().add(view(x16, {rows, cols}), view(x16, {rows, cols}), view(sum16, {rows, cols}));
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_EQ(sum16[i].bits, loom::to_f16(2 * x[i]).bits) << "add " << i;

  std::vector<int32_t> flag(1, 0);
  backend().check_finite(view(x16, {rows, cols}), view(flag, {1}));
  EXPECT_EQ(flag[0], 0);
  x16[17] = loom::to_f16(1e6f);  // beyond f16's 65504: +inf
  backend().check_finite(view(x16, {rows, cols}), view(flag, {1}));
  EXPECT_EQ(flag[0], 1) << "an f16 overflow is non-finite";
}

}  // namespace
