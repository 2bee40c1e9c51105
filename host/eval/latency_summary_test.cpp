// Latency statistics: linear interpolation between closest ranks (NumPy's default percentile),
// checked on values worked out by hand (numpy.percentile gives the same), at the ends of the range,
// with one sample, unsorted input and bad arguments. Interpolated values are compared to 1e-12:
// h = (n − 1)·q/100 is rounded (9·90/100 is 8.0999…96 in binary, so p90 below is 3 − 4e-15, as
// NumPy's is).
#include "eval/latency_summary.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <gtest/gtest.h>

namespace loom::host {
namespace {

TEST(LatencySummary, InterpolatesBetweenClosestRanks) {
  const std::vector<double> sorted{1, 2, 3, 4};
  // h = 3·q/100: p50 → 1.5 (2 + 0.5·1), p90 → 2.7 (3 + 0.7·1), p99 → 2.97.
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 50), 2.5);
  EXPECT_NEAR(percentile_of_sorted(sorted, 90), 3.7, 1e-12);
  EXPECT_NEAR(percentile_of_sorted(sorted, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 25), 1.75);
}

TEST(LatencySummary, EndsAreTheExtremes) {
  const std::vector<double> sorted{0.5, 0.75, 10};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0), 0.5);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 100), 10);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 50), 0.75);  // odd count: the middle sample
}

TEST(LatencySummary, TwentySamplesPutP99BetweenTheTwoLargest) {
  std::vector<double> samples;
  for (int i = 20; i >= 1; --i) samples.push_back(i);  // unsorted on purpose
  const LatencySummary s = summarize_latencies(samples);
  EXPECT_EQ(s.count, 20u);
  EXPECT_DOUBLE_EQ(s.p50, 10.5);     // h = 9.5
  EXPECT_NEAR(s.p90, 18.1, 1e-12);   // h = 17.1
  EXPECT_NEAR(s.p99, 19.81, 1e-12);  // h = 18.81
  EXPECT_DOUBLE_EQ(s.mean, 10.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 20);
}

TEST(LatencySummary, OneSampleIsEveryStatistic) {
  const LatencySummary s = summarize_latencies({0.125});
  EXPECT_EQ(s.count, 1u);
  for (double v : {s.mean, s.min, s.max, s.p50, s.p90, s.p99}) EXPECT_DOUBLE_EQ(v, 0.125);
}

TEST(LatencySummary, RepeatedValuesAndAnOutlier) {
  // Nine equal timings and one slow one: the median ignores it, p99 is pulled almost to it.
  std::vector<double> samples(9, 2.0);
  samples.push_back(12.0);
  const LatencySummary s = summarize_latencies(samples);
  EXPECT_DOUBLE_EQ(s.p50, 2.0);
  EXPECT_NEAR(s.p90, 3.0, 1e-12);   // h = 8.1
  EXPECT_NEAR(s.p99, 11.1, 1e-12);  // h = 8.91
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_LE(s.p50, s.p90);
  EXPECT_LE(s.p90, s.p99);
}

TEST(LatencySummary, RejectsNoSamplesAndPercentilesOutOfRange) {
  EXPECT_THROW(summarize_latencies({}), std::invalid_argument);
  EXPECT_THROW(percentile_of_sorted({}, 50), std::invalid_argument);
  EXPECT_THROW(percentile_of_sorted({1.0}, -1), std::invalid_argument);
  EXPECT_THROW(percentile_of_sorted({1.0}, 100.5), std::invalid_argument);
  EXPECT_THROW(percentile_of_sorted({1.0}, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
}

}  // namespace
}  // namespace loom::host
