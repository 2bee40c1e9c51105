// softmax forward/backward with scale and additive key mask against a double reference and
// finite differences; masked keys get zero probability; bf16 agrees with f32.
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

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

TEST(Softmax, MaskedForwardAndBackwardMatchDoubleReference) {
  const int64_t B = 2, H = 3, T = 7;
  const float scale = 0.37f;
  auto scores = random_floats(B * H * T * T, 41, -3, 3);
  std::vector<int32_t> attention = {1, 1, 1, 1, 1, 0, 0, /**/ 1, 1, 1, 1, 1, 1, 1};
  std::vector<float> mask(B * T), probs(scores.size());
  backend().additive_key_mask(view(attention, {B, T}), view(mask, {B, T}));
  EXPECT_EQ(mask[5], loom::kMaskedKey);
  EXPECT_EQ(mask[4], 0.0f);
  backend().softmax_forward(view(scores, {B, H, T, T}), view(mask, {B, T}), scale, view(probs, {B, H, T, T}));
  const auto sd = to_double(scores);
  expect_close(probs, reference_softmax(sd, mask, scale, B, H * T, T), 1e-5, 1e-7, "probs");
  for (int64_t r = 0; r < H * T; ++r) {
    EXPECT_EQ(probs[r * T + 5], 0.0f);
    EXPECT_EQ(probs[r * T + 6], 0.0f);
  }
  auto w = random_floats(scores.size(), 42);
  std::vector<float> dscores(scores.size());
  backend().softmax_backward(view(w, {B, H, T, T}), view(probs, {B, H, T, T}), scale,
                             view(dscores, {B, H, T, T}));
  const auto expected = numeric_gradient(
      [&](const auto& v) { return weighted_sum(reference_softmax(v, mask, scale, B, H * T, T), w); }, sd);
  expect_close(dscores, expected, 1e-4, 1e-6, "dscores");
}

TEST(Softmax, FullyMaskedRowIsUniformAndInPlaceWorks) {
  const int64_t B = 1, H = 1, T = 4;
  std::vector<float> scores = {1, 2, 3, 4, 0.5f, -1, 2, 0, 3, 3, 3, 3, -2, 1, 0, 0};
  std::vector<float> mask(T, loom::kMaskedKey);
  backend().softmax_forward(view(scores, {B, H, T, T}), view(mask, {B, T}), 1.0f, view(scores, {B, H, T, T}));
  for (float p : scores) EXPECT_FLOAT_EQ(p, 0.25f);
}

TEST(Softmax, Bf16ScoresAndProbsAgreeWithF32) {
  const int64_t rows = 11, T = 37;
  auto scores = random_floats(rows * T, 43, -4, 4);
  auto s16 = to_bf16(scores);
  auto sr = from_bf16(s16);
  std::vector<float> p(rows * T), p_from16(rows * T);
  std::vector<loom::BFloat16> p16(rows * T);
  backend().softmax_forward(view(sr, {rows, T}), loom::Tensor{}, 0.125f, view(p, {rows, T}));
  backend().softmax_forward(view(s16, {rows, T}), loom::Tensor{}, 0.125f, view(p_from16, {rows, T}));
  backend().softmax_forward(view(s16, {rows, T}), loom::Tensor{}, 0.125f, view(p16, {rows, T}));
  expect_close(p_from16, p, 1e-6, 1e-8, "bf16 scores vs f32 of the same values");
  expect_close(from_bf16(p16), p, 1.0 / 256, 1e-8, "bf16 probs: one RNE rounding");
  std::vector<float> dp = random_floats(rows * T, 44), ds(rows * T), ds16(rows * T);
  backend().softmax_backward(view(dp, {rows, T}), view(p, {rows, T}), 0.125f, view(ds, {rows, T}));
  backend().softmax_backward(view(dp, {rows, T}), view(p16, {rows, T}), 0.125f, view(ds16, {rows, T}));
  expect_close(ds16, ds, 0.02, 1e-4, "backward from bf16 probs");
}

}  // namespace
