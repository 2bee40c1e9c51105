// Tick positions: 1/2/5 × 10^k steps covering the range, and a bounded count even when the range
// is far below the values' precision (a smoothed flat line), which once looped until out of memory.
#include <gtest/gtest.h>

#include "plot.hpp"

namespace loom::dash {
namespace {

void expect_ticks(const std::vector<double>& got, const std::vector<double>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << i;
}

TEST(PlotTicks, NiceStepsCoverTheRange) {
  expect_ticks(nice_ticks(0, 10, 5), {0, 2, 4, 6, 8, 10});
  expect_ticks(nice_ticks(0.3, 0.9, 3), {0.4, 0.6, 0.8});
  expect_ticks(nice_ticks(-7, 7, 3), {-5, 0, 5});
}

TEST(PlotTicks, RangeBelowThePrecisionOfItsValuesStaysBounded) {
  const std::vector<double> ticks = nice_ticks(1.0, 1.0 + 1e-15, 5);
  EXPECT_LE(ticks.size(), 24u);
  EXPECT_TRUE(nice_ticks(2, 2, 5).empty());
  EXPECT_TRUE(nice_ticks(3, 1, 5).empty());
}

}  // namespace
}  // namespace loom::dash
