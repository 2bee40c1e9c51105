// The schedules against the reference formulas (docs/reference.md §2.2), written out in double.
#include <gtest/gtest.h>

#include <cmath>

#include "component_loader.hpp"
#include "recipe/errors.hpp"
#include "loom/sdk/schedule.hpp"

namespace {

using loom_optim_test::load_component;

// PolyWarmUpScheduler.get_lr with t = successful steps + 1.
double poly_reference(double base, uint64_t successful, uint64_t total, double warmup, double degree) {
  const double p = static_cast<double>(successful + 1) / static_cast<double>(total);
  if (p < warmup) return base * p / warmup;
  return base * std::pow(1.0 - p, degree);
}

// LinearWarmUpScheduler.get_lr with the counter at successful + 1.
double linear_reference(double base, uint64_t successful, uint64_t total, double warmup) {
  const double p = static_cast<double>(successful + 1) / static_cast<double>(total);
  if (p < warmup) return base * p / warmup;
  return base * std::max((p - 1.0) / (warmup - 1.0), 0.0);
}

TEST(PolyWarmup, MatchesReferenceOverTheWholeRun) {
  auto schedule = load_component<loom::Schedule>("poly-warmup", "warmup = 0.2843\ndegree = 0.5\n");
  schedule.get()->setup(7038);
  for (uint64_t s = 0; s < 7038; ++s)
    ASSERT_NEAR(schedule.get()->lr(6e-3, s), poly_reference(6e-3, s, 7038, 0.2843, 0.5), 1e-15)
        << "step " << s;
  // The first step already has a nonzero lr; warm-up peaks at base.
  EXPECT_NEAR(schedule.get()->lr(6e-3, 0), 6e-3 / 7038 / 0.2843, 1e-15);
  EXPECT_NEAR(schedule.get()->lr(6e-3, 2000), 6e-3 * std::sqrt(1 - 2001.0 / 7038), 1e-15);
  // The last step reaches 0; past the horizon the reference's NaN becomes 0.
  EXPECT_EQ(schedule.get()->lr(6e-3, 7037), 0.0);
  EXPECT_EQ(schedule.get()->lr(6e-3, 9000), 0.0);
}

TEST(PolyWarmup, DefaultsAndDegree) {
  auto schedule = load_component<loom::Schedule>("poly-warmup", "degree = 2.0\n");
  schedule.get()->setup(100);
  for (uint64_t s : {0u, 1u, 50u, 98u})
    EXPECT_NEAR(schedule.get()->lr(1.0, s), poly_reference(1.0, s, 100, 0.01, 2.0), 1e-15);
}

TEST(LinearWarmup, MatchesReferenceOverTheWholeRun) {
  auto schedule = load_component<loom::Schedule>("linear-warmup", "warmup = 0.1\n");
  schedule.get()->setup(1000);
  for (uint64_t s = 0; s < 1200; ++s)
    ASSERT_NEAR(schedule.get()->lr(5e-5, s), linear_reference(5e-5, s, 1000, 0.1), 1e-18) << "step " << s;
  EXPECT_NEAR(schedule.get()->lr(5e-5, 99), 5e-5, 1e-18);  // p = 0.1: the peak
  EXPECT_EQ(schedule.get()->lr(5e-5, 999), 0.0);           // p = 1: decayed to 0
  EXPECT_FALSE(std::signbit(schedule.get()->lr(5e-5, 999))) << "+0, not -0 (printed as lr -0.00e+00)";
}

TEST(LinearWarmup, WarmupOfOneOnlyWarmsUp) {
  auto schedule = load_component<loom::Schedule>("linear-warmup", "warmup = 1.0\n");
  schedule.get()->setup(10);
  EXPECT_NEAR(schedule.get()->lr(1.0, 4), 0.5, 1e-15);
  EXPECT_EQ(schedule.get()->lr(1.0, 9), 0.0);
}

TEST(ConstantSchedule, ConstantAfterOptionalWarmup) {
  auto plain = load_component<loom::Schedule>("constant");
  plain.get()->setup(10);
  for (uint64_t s = 0; s < 20; ++s) EXPECT_EQ(plain.get()->lr(3e-4, s), 3e-4);
  auto warm = load_component<loom::Schedule>("constant", "warmup = 0.5\n");
  warm.get()->setup(10);
  EXPECT_NEAR(warm.get()->lr(1.0, 0), 0.2, 1e-15);
  EXPECT_NEAR(warm.get()->lr(1.0, 3), 0.8, 1e-15);
  EXPECT_EQ(warm.get()->lr(1.0, 4), 1.0);
}

TEST(Schedules, NeedAHorizon) {
  auto schedule = load_component<loom::Schedule>("poly-warmup");
  EXPECT_THROW(schedule.call([](loom::Schedule& s) { return s.lr(1.0, 0); }), loom::host::PluginError);
  EXPECT_THROW(schedule.call([](loom::Schedule& s) { s.setup(0); }), loom::host::PluginError);
}

// Warm-up, a constant stretch, then decay over the last `decay` of the run.
TEST(WarmupStableDecay, WarmsUpHoldsThenDecays) {
  auto linear = load_component<loom::Schedule>("warmup-stable-decay", "warmup = 0.1\ndecay = 0.25\n");
  linear.get()->setup(1000);
  EXPECT_NEAR(linear.get()->lr(2e-3, 49), 2e-3 * 0.05 / 0.1, 1e-18);  // p = 0.05: half warmed up
  EXPECT_EQ(linear.get()->lr(2e-3, 99), 2e-3);                         // p = 0.1: the plateau
  EXPECT_EQ(linear.get()->lr(2e-3, 748), 2e-3);                        // p = 0.749: still on it
  EXPECT_NEAR(linear.get()->lr(2e-3, 874), 2e-3 * 0.5, 1e-15);         // p = 0.875: halfway down
  EXPECT_EQ(linear.get()->lr(2e-3, 999), 0.0);
  EXPECT_EQ(linear.get()->lr(2e-3, 5000), 0.0);
  auto root = load_component<loom::Schedule>("warmup-stable-decay", "decay = 0.5\ndecay_shape = \"1-sqrt\"\n");
  root.get()->setup(100);
  EXPECT_NEAR(root.get()->lr(1.0, 74), 1.0 - std::sqrt(0.5), 1e-15);  // p = 0.75: q = 0.5
  EXPECT_EQ(root.get()->lr(1.0, 49), 1.0);
}

TEST(WarmupStableDecay, WarmupAndDecayMustFit) {
  EXPECT_THROW(load_component<loom::Schedule>("warmup-stable-decay", "warmup = 0.5\ndecay = 0.6\n"),
               std::exception);
}

}  // namespace
