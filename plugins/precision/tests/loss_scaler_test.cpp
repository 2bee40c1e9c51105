// precision/fp16-mixed: the dynamic loss scaler's transitions — overflow → skip + backoff,
// growth after growth_interval clean steps, the cap, the floor that stops the run — and its state.
#include <gtest/gtest.h>

#include "recipe/errors.hpp"
#include "precision_loader.hpp"

namespace {

using loom_precision_test::load_policy;

TEST(LossScaler, StartsWithTheReferenceDefaults) {
  auto p = load_policy("fp16-mixed");
  EXPECT_EQ(p.get()->compute_dtype(), loom::ComputeDType::f16);
  EXPECT_TRUE(p.get()->keeps_master_weights());
  EXPECT_EQ(p.get()->loss_scale(), 1048576.0);  // 2^20, GradScaler(init_scale=2**20)
  EXPECT_EQ(p.get()->skipped_steps(), 0u);
}

TEST(LossScaler, OverflowSkipsTheStepAndBacksOff) {
  auto p = load_policy("fp16-mixed");
  loom::Precision& x = *p.get();
  const auto clean = x.after_backward(false);
  EXPECT_TRUE(clean.apply);
  EXPECT_EQ(clean.grad_scale, 1.0 / 1048576.0);
  const auto overflow = x.after_backward(true);
  EXPECT_FALSE(overflow.apply);
  EXPECT_EQ(overflow.grad_scale, 1.0 / 1048576.0);  // the scale that backward used
  EXPECT_EQ(overflow.loss_scale, 524288.0);
  EXPECT_EQ(x.loss_scale(), 524288.0);
  EXPECT_EQ(x.skipped_steps(), 1u);
  x.after_backward(true);
  EXPECT_EQ(x.loss_scale(), 262144.0);
  EXPECT_EQ(x.skipped_steps(), 2u);
  EXPECT_EQ(x.state().consecutive_skips, 2u);
  EXPECT_TRUE(x.after_backward(false).apply);
  EXPECT_EQ(x.state().consecutive_skips, 0u);
  EXPECT_EQ(x.skipped_steps(), 2u);
}

TEST(LossScaler, GrowsAfter2000CleanStepsAndOverflowRestartsTheCount) {
  auto p = load_policy("fp16-mixed", "initial_scale = 65536.0\n");
  loom::Precision& x = *p.get();
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(x.after_backward(false).apply);
  EXPECT_EQ(x.loss_scale(), 65536.0);
  const auto grown = x.after_backward(false);  // the 2000th clean step
  EXPECT_TRUE(grown.apply);
  EXPECT_EQ(grown.grad_scale, 1.0 / 65536.0);
  EXPECT_EQ(x.loss_scale(), 131072.0);
  EXPECT_EQ(x.state().clean_steps, 0u);

  for (int i = 0; i < 1500; ++i) x.after_backward(false);
  x.after_backward(true);  // 131072 → 65536, count restarts
  for (int i = 0; i < 1999; ++i) x.after_backward(false);
  EXPECT_EQ(x.loss_scale(), 65536.0);
  x.after_backward(false);
  EXPECT_EQ(x.loss_scale(), 131072.0);
}

TEST(LossScaler, GrowthStopsAtMaxScale) {
  auto p = load_policy("fp16-mixed", "initial_scale = 64.0\nmax_scale = 100.0\ngrowth_interval = 3\n");
  loom::Precision& x = *p.get();
  for (int i = 0; i < 3; ++i) x.after_backward(false);
  EXPECT_EQ(x.loss_scale(), 100.0);
  for (int i = 0; i < 3; ++i) x.after_backward(false);
  EXPECT_EQ(x.loss_scale(), 100.0);
}

TEST(LossScaler, OverflowAtTheMinimumStopsWithADiagnosis) {
  auto p = load_policy("fp16-mixed", "initial_scale = 4.0\nmin_scale = 1.5\n");
  EXPECT_FALSE(p.call([](loom::Precision& x) { return x.after_backward(true); }).apply);
  EXPECT_EQ(p.get()->loss_scale(), 2.0);
  EXPECT_FALSE(p.call([](loom::Precision& x) { return x.after_backward(true); }).apply);
  EXPECT_EQ(p.get()->loss_scale(), 1.5);  // clamped to the floor, never below, never 0
  try {
    p.call([](loom::Precision& x) { return x.after_backward(true); });
    FAIL() << "expected the run to stop";
  } catch (const loom::host::PluginError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("precision/fp16-mixed"), std::string::npos) << message;
    EXPECT_NE(message.find("loss scale is at its minimum (min_scale = 1.5)"), std::string::npos) << message;
    EXPECT_NE(message.find("3 consecutive skipped steps"), std::string::npos) << message;
    EXPECT_NE(message.find("bf16-mixed"), std::string::npos) << message;
  }
}

TEST(LossScaler, StateRoundTripsAndResumesIdentically) {
  auto a = load_policy("fp16-mixed", "growth_interval = 5\n");
  for (bool overflow : {false, true, false, false, true, false, false}) a.get()->after_backward(overflow);
  const loom::LossScalerState saved = a.get()->state();
  EXPECT_EQ(saved.loss_scale, 262144.0);
  EXPECT_EQ(saved.clean_steps, 2u);
  EXPECT_EQ(saved.skipped_steps, 2u);
  auto b = load_policy("fp16-mixed", "growth_interval = 5\n");
  b.get()->restore_state(saved);
  for (int i = 0; i < 4; ++i) {
    const auto da = a.get()->after_backward(i == 2), db = b.get()->after_backward(i == 2);
    EXPECT_EQ(da.apply, db.apply);
    EXPECT_EQ(da.loss_scale, db.loss_scale);
  }
  EXPECT_EQ(b.get()->state().skipped_steps, 3u);
}

TEST(LossScaler, RefusesAStateOutsideItsBounds) {
  auto p = load_policy("fp16-mixed");
  EXPECT_THROW(p.call([](loom::Precision& x) { x.restore_state({0.0, 0, 0, 0}); }), loom::host::PluginError);
  EXPECT_THROW(p.call([](loom::Precision& x) { x.restore_state({1e30, 0, 0, 0}); }), loom::host::PluginError);
  EXPECT_EQ(p.get()->loss_scale(), 1048576.0);
}

TEST(LossScaler, ValidatesItsOptions) {
  auto problems = [](const std::string& toml) -> std::string {
    try {
      load_policy("fp16-mixed", toml);
    } catch (const loom::host::RecipeError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(
      problems("initial_scale = 65536.0\ngrowth_factor = 2.0\nbackoff_factor = 0.5\ngrowth_interval = 2000\n"
               "min_scale = 1.0\nmax_scale = 16777216.0\n"),
      "");
  const std::string m = problems("growth_factor = 1.0\nbackoff_factor = 1.0\ngrowth_interval = 0\n");
  EXPECT_NE(m.find("precision.growth_factor: value 1.0 is out of range (1, 1e+06]"), std::string::npos) << m;
  EXPECT_NE(m.find("precision.backoff_factor: value 1.0 is out of range (0, 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("precision.growth_interval: value 0 is out of range"), std::string::npos) << m;
  EXPECT_NE(problems("initial_scale = 0.5\n").find("precision.initial_scale: initial_scale 0.5 lies outside"),
            std::string::npos);
  EXPECT_NE(problems("min_scale = 10.0\nmax_scale = 2.0\n").find("precision.min_scale"), std::string::npos);
  EXPECT_NE(problems("max_consecutive_skips = 3\n").find("precision.max_consecutive_skips: unknown key"),
            std::string::npos);
}

// NaN compares false with every bound: each option refuses it by name, with its allowed range.
TEST(LossScaler, RefusesNonFiniteOptions) {
  std::string m;
  try {
    load_policy("fp16-mixed",
                "initial_scale = nan\ngrowth_factor = nan\nbackoff_factor = nan\nmin_scale = nan\n"
                "max_scale = inf\n");
  } catch (const loom::host::RecipeError& e) {
    m = e.what();
  }
  for (const char* key : {"initial_scale: value nan", "growth_factor: value nan", "backoff_factor: value nan",
                          "min_scale: value nan", "max_scale: value inf"})
    EXPECT_NE(m.find(std::string("precision.") + key + " is not a finite number (allowed: "),
              std::string::npos)
        << key << " in:\n"
        << m;
}

}  // namespace
