// MaskedLmBreakdown: categories from the input, per-category accuracy and cross-entropy, the
// unigram baseline, and rows that do not match the labelled positions.
#include "eval/masked_lm_breakdown.hpp"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace loom::host {
namespace {

constexpr int32_t kMask = 3;

// Vocabulary of 4; one batch row of 6 positions, 4 of them labelled.
//   pos 0: input [MASK], label 1, logits favour 1           → mask, correct
//   pos 1: unlabelled
//   pos 2: input 2 (= label), logits favour 0               → kept, wrong
//   pos 3: input [MASK], label 1, logits favour 2           → mask, wrong
//   pos 4: input 0 (≠ label 1), logits favour 1             → random, correct
//   pos 5: unlabelled
const int32_t kInputs[] = {kMask, 0, 2, kMask, 0, 1};
const int32_t kLabels[] = {1, -1, 2, 1, 1, -1};
const std::vector<float> kLogits = {
    0.f, 2.f, 0.f, 0.f,  //
    3.f, 0.f, 1.f, 0.f,  //
    0.f, 1.f, 4.f, 0.f,  //
    0.f, 5.f, 0.f, 0.f,  //
};

double cross_entropy(const float* row, int label) {
  double sum = 0;
  for (int v = 0; v < 4; ++v) sum += std::exp(static_cast<double>(row[v]));
  return std::log(sum) - row[label];
}

TEST(MaskedLmBreakdown, SplitsByWhatTheInputHeld) {
  MaskedLmBreakdown breakdown(kMask);
  breakdown.add(kLogits, 4, kInputs, kLabels, 6);
  const nlohmann::json m = breakdown.metrics();
  EXPECT_EQ(m["eval_mlm_mask_tokens"], 2u);
  EXPECT_EQ(m["eval_mlm_kept_tokens"], 1u);
  EXPECT_EQ(m["eval_mlm_random_tokens"], 1u);
  EXPECT_DOUBLE_EQ(m["eval_mlm_mask_accuracy"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m["eval_mlm_kept_accuracy"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(m["eval_mlm_random_accuracy"].get<double>(), 1.0);
  const double mask_loss = (cross_entropy(&kLogits[0], 1) + cross_entropy(&kLogits[8], 1)) / 2;
  EXPECT_NEAR(m["eval_mlm_mask_loss"].get<double>(), mask_loss, 1e-12);
  EXPECT_NEAR(m["eval_mlm_kept_loss"].get<double>(), cross_entropy(&kLogits[4], 2), 1e-12);
  EXPECT_NEAR(m["eval_mlm_random_loss"].get<double>(), cross_entropy(&kLogits[12], 1), 1e-12);
  // Targets 1, 2, 1, 1: token 1 is 3 of 4.
  EXPECT_DOUBLE_EQ(m["eval_mlm_unigram_baseline"].get<double>(), 0.75);
  EXPECT_EQ(m["eval_mlm_unigram_token"], 1);
}

TEST(MaskedLmBreakdown, AccumulatesBatches) {
  MaskedLmBreakdown breakdown(kMask);
  breakdown.add(kLogits, 4, kInputs, kLabels, 6);
  breakdown.add(kLogits, 4, kInputs, kLabels, 6);
  const nlohmann::json m = breakdown.metrics();
  EXPECT_EQ(m["eval_mlm_mask_tokens"], 4u);
  EXPECT_DOUBLE_EQ(m["eval_mlm_mask_accuracy"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m["eval_mlm_unigram_baseline"].get<double>(), 0.75);
}

TEST(MaskedLmBreakdown, LargeLogitsStayFinite) {
  MaskedLmBreakdown breakdown(kMask);
  const std::vector<float> logits = {1000.f, 0.f, -1000.f, 0.f};
  const int32_t inputs[] = {kMask};
  const int32_t labels[] = {2};
  breakdown.add(logits, 4, inputs, labels, 1);
  EXPECT_NEAR(breakdown.metrics()["eval_mlm_mask_loss"].get<double>(), 2000.0, 1e-9);
}

TEST(MaskedLmBreakdown, RowsMustMatchLabelledPositions) {
  MaskedLmBreakdown breakdown(kMask);
  const std::vector<float> three_rows(kLogits.begin(), kLogits.begin() + 12);
  EXPECT_THROW(breakdown.add(three_rows, 4, kInputs, kLabels, 6), std::runtime_error);
  const std::vector<float> five_rows = [] {
    std::vector<float> v = kLogits;
    v.insert(v.end(), 4, 0.f);
    return v;
  }();
  EXPECT_THROW(breakdown.add(five_rows, 4, kInputs, kLabels, 6), std::runtime_error);
}

TEST(MaskedLmBreakdown, EmptyIsZero) {
  const nlohmann::json m = MaskedLmBreakdown(kMask).metrics();
  EXPECT_EQ(m["eval_mlm_mask_tokens"], 0u);
  EXPECT_DOUBLE_EQ(m["eval_mlm_unigram_baseline"].get<double>(), 0.0);
}

}  // namespace
}  // namespace loom::host
