// Alert rules on histories built from protocol messages: each rule fires on its condition and stays
// quiet on a healthy run.
#include <gtest/gtest.h>

#include <cmath>

#include "alert_rules.hpp"

namespace loom::dash {
namespace {

nlohmann::json train(uint64_t step, double loss, double scale, double seq_per_s, uint64_t skipped = 0) {
  return {{"type", "train"},        {"step", step},       {"loss", loss}, {"loss_scale", scale},
          {"sequences_per_second", seq_per_s}, {"skipped_steps", skipped}};
}

RunHistory healthy(int records) {
  RunHistory h;
  h.ingest({{"type", "hello"}, {"run", "r"}, {"total_steps", 1000}}, 0);
  for (int i = 1; i <= records; ++i) h.ingest(train(10 * i, 5.0 - 0.01 * i, 65536, 100 + i % 3), i);
  return h;
}

std::vector<std::string> rules(const RunHistory& h, double now) {
  std::vector<std::string> out;
  for (const Alert& a : evaluate_alerts(h, now)) out.push_back(a.rule);
  return out;
}

TEST(AlertRules, HealthyRunHasNone) {
  EXPECT_TRUE(rules(healthy(30), 31).empty());
}

TEST(AlertRules, NonFiniteLoss) {
  RunHistory h = healthy(10);
  h.ingest({{"type", "train"}, {"step", 110}, {"loss", nullptr}, {"loss_scale", 65536}}, 11);  // NaN is written as null
  EXPECT_EQ(rules(h, 11), std::vector<std::string>{"non-finite loss"});
}

TEST(AlertRules, LossScaleCollapseBelowOneOrFarUnderItsPeak) {
  RunHistory h = healthy(10);
  h.ingest(train(110, 4.9, 65536.0 / 1024, 100, 10), 11);
  EXPECT_EQ(rules(h, 11), std::vector<std::string>{"loss-scale collapse"});
  RunHistory small = healthy(10);
  small.ingest(train(110, 4.9, 65536.0 / 512, 100, 9), 11);
  EXPECT_TRUE(rules(small, 11).empty()) << "2^9 under the peak is normal dynamic scaling";
  small.ingest(train(120, 4.9, 0.5, 100, 30), 12);
  EXPECT_EQ(rules(small, 12), std::vector<std::string>{"loss-scale collapse"});
}

TEST(AlertRules, StalledRunButNotAFinishedOne) {
  RunHistory h = healthy(10);
  EXPECT_TRUE(rules(h, 10 + 119).empty());
  EXPECT_EQ(rules(h, 10 + 121), std::vector<std::string>{"stalled run"});
  h.ingest({{"type", "end"}, {"step", 100}, {"stopped_early", true}}, 12);
  EXPECT_TRUE(rules(h, 1000).empty());
}

TEST(AlertRules, ThroughputDropAgainstTheRecentMedian) {
  RunHistory h = healthy(30);
  h.ingest(train(310, 4.7, 65536, 45), 31);
  EXPECT_EQ(rules(h, 31), std::vector<std::string>{"throughput drop"});
  RunHistory mild = healthy(30);
  mild.ingest(train(310, 4.7, 65536, 70), 31);
  EXPECT_TRUE(rules(mild, 31).empty());
}

TEST(AlertRules, SkippedStepsAreMarkedWhereTheCountGrows) {
  RunHistory h = healthy(2);
  h.ingest(train(30, 4.9, 32768, 100, 1), 3);
  h.ingest(train(40, 4.9, 32768, 100, 1), 4);
  h.ingest(train(50, 4.9, 16384, 100, 3), 5);
  EXPECT_EQ(h.skipped_steps, (std::vector<double>{30, 50}));
}

}  // namespace
}  // namespace loom::dash
