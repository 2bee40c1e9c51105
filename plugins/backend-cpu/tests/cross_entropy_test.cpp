// cross_entropy: mean loss, dlogits (finite differences), ignore index, padded classes,
// per-row correctness and in-place gradients.
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

double reference_mean_loss(const std::vector<double>& logits, const std::vector<int64_t>& targets,
                           int64_t width, int64_t classes, int64_t ignore) {
  double total = 0;
  int64_t counted = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] == ignore) continue;
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < classes; ++c) max = std::max(max, logits[r * width + c]);
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits[r * width + c] - max);
    total += std::log(sum) + max - logits[r * width + targets[r]];
    ++counted;
  }
  return counted ? total / counted : 0.0;
}

TEST(CrossEntropy, LossGradientIgnoreIndexAndPadding) {
  const int64_t N = 7, classes = 13, width = 16;  // vocab padded to a multiple of 8
  auto logits = random_floats(N * width, 91, -3, 3);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = classes; c < width; ++c) logits[r * width + c] = 100.0f;  // padding must not matter
  std::vector<int64_t> targets = {4, -100, 0, 12, -100, 7, 4};
  std::vector<float> loss(1), dlogits(N * width, 9.0f), row_loss(N);
  std::vector<int32_t> correct(N, 5);
  const float grad_scale = 3.0f;
  backend().cross_entropy(view(logits, {N, width}), view(targets, {N}), classes, -100, grad_scale,
                          view(loss, {1}), view(dlogits, {N, width}), view(row_loss, {N}),
                          view(correct, {N}));
  const auto ld = to_double(logits);
  EXPECT_NEAR(loss[0], reference_mean_loss(ld, targets, width, classes, -100), 1e-5);
  const auto expected = numeric_gradient(
      [&](const auto& v) { return grad_scale * reference_mean_loss(v, targets, width, classes, -100); }, ld);
  expect_close(dlogits, expected, 1e-4, 1e-6, "dlogits (zero on padding columns and ignored rows)");
  double sum_rows = 0;
  for (int64_t r = 0; r < N; ++r) {
    sum_rows += row_loss[r];
    int64_t argmax = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (logits[r * width + c] > logits[r * width + argmax]) argmax = c;
    EXPECT_EQ(correct[r], targets[r] != -100 && argmax == targets[r] ? 1 : 0) << "row " << r;
  }
  EXPECT_EQ(row_loss[1], 0.0f);
  EXPECT_NEAR(sum_rows / 5, loss[0], 1e-5);

  // In place: dlogits = logits gives the same gradient.
  auto in_place = logits;
  std::vector<float> loss2(1);
  backend().cross_entropy(view(in_place, {N, width}), view(targets, {N}), classes, -100, grad_scale,
                          view(loss2, {1}), view(in_place, {N, width}), loom::Tensor{}, loom::Tensor{});
  EXPECT_EQ(in_place, dlogits);
  EXPECT_EQ(loss2[0], loss[0]);
}

TEST(CrossEntropy, AllRowsIgnoredGiveZeroLossAndGradient) {
  std::vector<float> logits = random_floats(3 * 4, 92), loss(1, 7.0f), d(12, 1.0f);
  std::vector<int32_t> targets = {-1, -1, -1};
  backend().cross_entropy(view(logits, {3, 4}), view(targets, {3}), 4, -1, 1.0f, view(loss, {1}),
                          view(d, {3, 4}), loom::Tensor{}, loom::Tensor{});
  EXPECT_EQ(loss[0], 0.0f);
  for (float v : d) EXPECT_EQ(v, 0.0f);
}

TEST(CrossEntropy, TargetOutsideClassesIsAnError) {
  std::vector<float> logits(2 * 8), loss(1);
  std::vector<int32_t> targets = {0, 5};
  EXPECT_THROW(backend().cross_entropy(view(logits, {2, 8}), view(targets, {2}), 5, -100, 1.0f,
                                       view(loss, {1}), loom::Tensor{}, loom::Tensor{}, loom::Tensor{}),
               loom::Error);
}

}  // namespace
