// Min/max downsampling: every spike survives, columns are bounded by the pixel width, and 200,000
// points reduce to one column per pixel.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "downsample.hpp"

namespace loom::dash {
namespace {

TEST(Downsample, KeepsEverySpikeOfTwoHundredThousandPoints) {
  std::vector<double> x(200000), y(200000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i), y[i] = std::sin(0.001 * static_cast<double>(i));
  y[123457] = 50.0;   // one-point spike up
  y[4242] = -40.0;    // and down
  const auto start = std::chrono::steady_clock::now();
  const std::vector<PixelColumn> columns = downsample_min_max(x, y, 0, 199999, 1000);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(columns.size(), 1000u);
  double top = -1e9, bottom = 1e9;
  for (const auto& c : columns) top = std::max(top, c.max), bottom = std::min(bottom, c.min);
  EXPECT_EQ(top, 50.0);
  EXPECT_EQ(bottom, -40.0);
  EXPECT_EQ(columns[617].max, 50.0);  // 123457 / 200 = column 617
  EXPECT_LT(ms, 50.0) << "one pass over 200k points should take a few milliseconds";
}

TEST(Downsample, ColumnHoldsFirstLastMinMax) {
  const std::vector<double> x{0, 1, 2, 3, 10}, y{5, 1, 9, 4, 7};
  const auto columns = downsample_min_max(x, y, 0, 10, 2);  // [0,5) and [5,10]
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[0].column, 0);
  EXPECT_EQ(columns[0].first, 5);
  EXPECT_EQ(columns[0].min, 1);
  EXPECT_EQ(columns[0].max, 9);
  EXPECT_EQ(columns[0].last, 4);
  EXPECT_EQ(columns[1].column, 1);
  EXPECT_EQ(columns[1].min, 7);
}

TEST(Downsample, OnlyTheVisibleRangeAndFiniteValues) {
  const std::vector<double> x{0, 1, 2, 3, 4, 5}, y{100, 1, NAN, 3, INFINITY, 100};
  const auto columns = downsample_min_max(x, y, 1, 4, 3);
  ASSERT_EQ(columns.size(), 2u);  // x=2 is NaN and x=4 infinite: skipped; x=0 and x=5 are outside
  EXPECT_EQ(columns[0].max, 1);
  EXPECT_EQ(columns[1].max, 3);
}

TEST(Downsample, EmptyOrDegenerateInputGivesNoColumns) {
  EXPECT_TRUE(downsample_min_max({}, {}, 0, 1, 100).empty());
  EXPECT_TRUE(downsample_min_max({1}, {1}, 1, 1, 100).empty());
  EXPECT_TRUE(downsample_min_max({1}, {1}, 0, 2, 0).empty());
}

}  // namespace
}  // namespace loom::dash
