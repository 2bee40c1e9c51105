// Smoothing: TensorBoard's debiased EMA — identity at 0, unbiased start, constant stays constant,
// non-finite values do not poison the average.
#include <gtest/gtest.h>

#include <cmath>

#include "smoothing.hpp"

namespace loom::dash {
namespace {

TEST(Smoothing, WeightZeroIsTheRawSeries) {
  const std::vector<double> y{3, 1, 4, 1, 5};
  EXPECT_EQ(smooth_ema(y, 0), y);
}

TEST(Smoothing, ConstantSeriesStaysConstantFromTheFirstPoint) {
  for (double v : smooth_ema(std::vector<double>(50, 7.5), 0.9)) EXPECT_NEAR(v, 7.5, 1e-12);
}

TEST(Smoothing, MatchesTheDebiasedMovingAverage) {
  const std::vector<double> y{10, 0, 10};
  const auto s = smooth_ema(y, 0.5);
  // averages 5, 2.5, 6.25 debiased by 1-0.5, 1-0.25, 1-0.125
  EXPECT_NEAR(s[0], 10.0, 1e-12);
  EXPECT_NEAR(s[1], 2.5 / 0.75, 1e-12);
  EXPECT_NEAR(s[2], 6.25 / 0.875, 1e-12);
}

TEST(Smoothing, NonFiniteValuesPassThroughWithoutPoisoning) {
  const auto s = smooth_ema({1, NAN, 1, INFINITY, 1}, 0.8);
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_TRUE(std::isinf(s[3]));
  EXPECT_NEAR(s[4], 1.0, 1e-12);
}

TEST(Smoothing, ReducesNoise) {
  std::vector<double> y;
  for (int i = 0; i < 400; ++i) y.push_back(i % 2 == 0 ? 1.0 : -1.0);
  const auto s = smooth_ema(y, 0.95);
  EXPECT_LT(std::fabs(s.back()), 0.1);
}

}  // namespace
}  // namespace loom::dash
