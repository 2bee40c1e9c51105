// backend/cpu's GEMM on f16 operands (the compute dtype of fp16-mixed) widens them and runs the f32
// path: it equals the f32 GEMM of the same values bit for bit (strided per-head views and a
// transposed weight gradient included), and an f16 output is that result rounded once. How close
// any backend's 16-bit GEMM is to f32: tests/backend_ops/gemm_test.cpp.
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

}  // namespace
