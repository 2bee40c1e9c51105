// Finding NaN and infinity in a run's flat buffers, by parameter, and the run's error when the
// state is not finite.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "train/finite_state.hpp"

namespace loom::host {
namespace {

ParameterTable table_of(const std::vector<std::pair<std::string, int64_t>>& parameters) {
  ParameterTable table;
  for (const auto& [name, count] : parameters) table.add(name, {count}, loom::ParameterInit::zeros, false, 0);
  return table;
}

TEST(FiniteState, AFiniteBufferHasNothingToReport) {
  const ParameterTable table = table_of({{"a.weight", 5}, {"b.bias", 3}});
  const std::vector<float> weights(table.total_elements(), 0.5f);
  EXPECT_FALSE(find_nonfinite(weights.data(), weights.size(), table));
}

TEST(FiniteState, CountsEveryNaNAndInfinityAndNamesTheFirstParameter) {
  const ParameterTable table = table_of({{"a.weight", 5}, {"b.weight", 40}, {"c.bias", 3}});
  std::vector<float> weights(table.total_elements(), 1.0f);
  const ParameterEntry& b = table.entries()[1];
  const ParameterEntry& c = table.entries()[2];
  weights[b.offset + 7] = std::numeric_limits<float>::quiet_NaN();
  weights[b.offset + 8] = std::numeric_limits<float>::infinity();
  weights[c.offset] = -std::numeric_limits<float>::infinity();
  const auto found = find_nonfinite(weights.data(), weights.size(), table);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->count, 3u);
  EXPECT_EQ(found->parameter, "b.weight");
  EXPECT_EQ(describe_nonfinite("weights", *found),
            "weights: 3 NaN or infinite values, the first in b.weight");
}

TEST(FiniteState, AlignmentPaddingIsNeverRead) {
  // 5 elements, then padding up to the next 64-byte boundary that no parameter owns.
  const ParameterTable table = table_of({{"a.weight", 5}, {"b.weight", 3}});
  ASSERT_GT(table.entries()[1].offset, 5u);
  std::vector<float> state(table.total_elements(), std::numeric_limits<float>::quiet_NaN());
  for (const ParameterEntry& e : table.entries())
    for (size_t i = 0; i < e.count; ++i) state[e.offset + i] = 0.0f;
  EXPECT_FALSE(find_nonfinite(state.data(), state.size(), table));
}

TEST(FiniteState, ABufferOfAnotherLayoutIsScannedWhole) {
  const ParameterTable table = table_of({{"a.weight", 5}});
  std::vector<float> other(3, 0.0f);
  other[2] = std::numeric_limits<float>::infinity();
  const auto found = find_nonfinite(other.data(), other.size(), table);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->count, 1u);
  EXPECT_EQ(found->parameter, "");
  EXPECT_EQ(describe_nonfinite("optimizer state 'step'", *found),
            "optimizer state 'step': 1 NaN or infinite value");
}

TEST(FiniteState, TheRunsErrorNamesTheStepAndTheCheckpointToResumeFrom) {
  const std::string message =
      diverged_run_message(14, "weights: 3 NaN or infinite values, the first in b.weight", 9,
                           std::filesystem::path("runs/x/checkpoints/step-000005"));
  EXPECT_NE(message.find("the run diverged: at step 14 its state is not finite"), std::string::npos)
      << message;
  EXPECT_NE(message.find("9 steps were skipped"), std::string::npos) << message;
  EXPECT_NE(message.find("no checkpoint was written for step 14"), std::string::npos) << message;
  EXPECT_NE(message.find("runs/x/checkpoints/step-000005 (the one checkpoints/latest names)"),
            std::string::npos)
      << message;
  const std::string none = diverged_run_message(3, "weights: 1 NaN or infinite value", 0, std::nullopt);
  EXPECT_NE(none.find("start again with a lower learning rate"), std::string::npos) << none;
}

}  // namespace
}  // namespace loom::host
