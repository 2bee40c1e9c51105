// precision/fp32 and precision/bf16-mixed: dtypes, master weights, no scaling, skipping non-finite
// steps and stopping after max_consecutive_skips; the host non-finite check of every policy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "recipe/errors.hpp"
#include "precision_loader.hpp"

namespace {

using loom_precision_test::load_policy;

TEST(Fp32Precision, ComputesInFp32WithoutMasterOrScale) {
  auto p = load_policy("fp32");
  EXPECT_EQ(p.get()->compute_dtype(), loom::ComputeDType::f32);
  EXPECT_FALSE(p.get()->keeps_master_weights());
  EXPECT_EQ(p.get()->loss_scale(), 1.0);
  const auto d = p.get()->after_backward(false);
  EXPECT_TRUE(d.apply);
  EXPECT_EQ(d.grad_scale, 1.0);
}

TEST(Bf16MixedPrecision, ComputesInBf16WithFp32MasterAndNoScale) {
  auto p = load_policy("bf16-mixed");
  EXPECT_EQ(p.get()->compute_dtype(), loom::ComputeDType::bf16);
  EXPECT_TRUE(p.get()->keeps_master_weights());
  EXPECT_EQ(p.get()->loss_scale(), 1.0);
}

TEST(UnscaledPrecision, SkipsNonFiniteStepsThenStopsAfterTheLimit) {
  auto p = load_policy("bf16-mixed", "max_consecutive_skips = 3\n");
  EXPECT_FALSE(p.get()->after_backward(true).apply);
  EXPECT_TRUE(p.get()->after_backward(false).apply);  // a clean step resets the streak
  EXPECT_FALSE(p.get()->after_backward(true).apply);
  EXPECT_FALSE(p.get()->after_backward(true).apply);
  EXPECT_EQ(p.get()->skipped_steps(), 3u);
  EXPECT_EQ(p.get()->loss_scale(), 1.0);
  try {
    p.call([](loom::Precision& x) { return x.after_backward(true); });
    FAIL() << "expected the run to stop";
  } catch (const loom::host::PluginError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("not finite in 3 consecutive steps (4 skipped in total) in bf16-mixed"),
              std::string::npos)
        << message;
  }
}

TEST(UnscaledPrecision, ZeroLimitNeverStops) {
  auto p = load_policy("fp32", "max_consecutive_skips = 0\n");
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(p.get()->after_backward(true).apply);
  EXPECT_EQ(p.get()->skipped_steps(), 100u);
  const auto saved = p.get()->state();
  auto q = load_policy("fp32");
  q.get()->restore_state(saved);
  EXPECT_EQ(q.get()->skipped_steps(), 100u);
}

TEST(NonFiniteCheck, FindsInfAndNanAnywhereAndNothingElse) {
  for (const char* name : {"fp32", "bf16-mixed", "fp16-mixed"}) {
    auto p = load_policy(name);
    std::vector<float> data(100003);
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = std::ldexp(static_cast<float>(i % 7) - 3.0f, int(i % 250) - 125);
    data[17] = std::numeric_limits<float>::max();
    data[18] = -std::numeric_limits<float>::max();
    data[19] = std::numeric_limits<float>::denorm_min();
    EXPECT_FALSE(p.get()->any_nonfinite(data.data(), data.size())) << name;
    EXPECT_FALSE(p.get()->any_nonfinite(nullptr, 0)) << name;
    for (size_t at : {size_t{0}, size_t{8191}, size_t{8192}, size_t{99999}, data.size() - 1}) {
      for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()}) {
        const float keep = data[at];
        data[at] = bad;
        EXPECT_TRUE(p.get()->any_nonfinite(data.data(), data.size())) << name << " at " << at;
        data[at] = keep;
      }
    }
  }
}

}  // namespace
