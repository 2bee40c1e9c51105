// Every BERT block's backward against central finite differences of its forward, for parameters
// AND inputs, on a small random config (hidden 24, 3 heads, intermediate 37, vocab 53 padded to
// 56, seq 7 with padding), both GELU variants, dropout off and on (the mask is a deterministic
// function of the Philox key, so finite differences see the same mask). bf16 compute is checked
// against f32 within stated tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "block_harness.hpp"

namespace loom_bert_test {
namespace {

struct GradientCase {
  const char* component;
  loom::GeluKind gelu;
  bool training;
  int32_t num_labels = 3;  // 1: the classifier head as a regression head (MSE on f32 targets)
};

std::string case_name(const testing::TestParamInfo<GradientCase>& info) {
  std::string name = info.param.component;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name + (info.param.gelu == loom::GeluKind::tanh ? "_tanh" : "_erf") +
         (info.param.training ? "_dropout" : "_eval") + (info.param.num_labels == 1 ? "_regression" : "");
}

// Elements to probe: a few random ones plus the one with the largest analytic gradient.
std::vector<size_t> probes(const float* gradient, size_t count, std::mt19937& rng) {
  std::vector<size_t> picks;
  std::uniform_int_distribution<size_t> pick(0, count - 1);
  for (int k = 0; k < 6; ++k) picks.push_back(pick(rng));
  size_t largest = 0;
  for (size_t e = 1; e < count; ++e)
    if (std::fabs(gradient[e]) > std::fabs(gradient[largest])) largest = e;
  picks.push_back(largest);
  return picks;
}

// Central difference of the objective with respect to *value.
double finite_difference(BlockHarness& h, float* value, bool training) {
  const float saved = *value;
  const float step = 1e-2f;
  *value = saved + step;
  const double plus = h.objective(training);
  *value = saved - step;
  const double minus = h.objective(training);
  *value = saved;
  return (plus - minus) / (2.0 * step);
}

void expect_close(double numeric, double analytic, const std::string& what) {
  const double tolerance = 3e-3 + 2e-2 * std::max(std::fabs(numeric), std::fabs(analytic));
  EXPECT_NEAR(numeric, analytic, tolerance) << what;
}

class BlockGradient : public testing::TestWithParam<GradientCase> {};

TEST_P(BlockGradient, MatchesFiniteDifferencesForParametersAndInputs) {
  const GradientCase& c = GetParam();
  loom::ModelConfig config = small_config(c.gelu);
  config.num_labels = c.num_labels;
  SmallBatch batch = small_batch(config);
  batch.regression = c.num_labels == 1;
  BlockHarness h(c.component, config, loom::DType::f32, batch);
  h.randomize(11);
  h.gradients(c.training);
  std::mt19937 rng(3);

  std::vector<std::vector<float>> analytic;
  for (size_t i = 0; i < h.parameter_count(); ++i)
    analytic.emplace_back(h.gradient(i), h.gradient(i) + h.count(i));
  std::vector<float> input_analytic;
  const bool has_input = h.block().role() != loom::BlockRole::embeddings;
  if (has_input) input_analytic.assign(h.input_gradient(), h.input_gradient() + h.input_count());

  size_t nonzero = 0;
  for (size_t i = 0; i < h.parameter_count(); ++i) {
    for (size_t e : probes(analytic[i].data(), analytic[i].size(), rng)) {
      const double numeric = finite_difference(h, h.values(i) + e, c.training);
      expect_close(numeric, analytic[i][e], std::string(h.spec(i).name) + "[" + std::to_string(e) + "]");
      nonzero += std::fabs(analytic[i][e]) > 1e-4 ? 1 : 0;
    }
  }
  EXPECT_GT(nonzero, h.parameter_count()) << "most probed parameter gradients should be non-zero";
  if (has_input) {
    size_t input_nonzero = 0;
    for (size_t e : probes(input_analytic.data(), input_analytic.size(), rng)) {
      const double numeric = finite_difference(h, h.input() + e, c.training);
      expect_close(numeric, input_analytic[e], "input[" + std::to_string(e) + "]");
      input_nonzero += std::fabs(input_analytic[e]) > 1e-4 ? 1 : 0;
    }
    EXPECT_GT(input_nonzero, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlockGradient,
                         testing::Values(GradientCase{"bert.embeddings", loom::GeluKind::erf, false},
                                         GradientCase{"bert.embeddings", loom::GeluKind::erf, true},
                                         GradientCase{"bert.encoder-layer", loom::GeluKind::erf, false},
                                         GradientCase{"bert.encoder-layer", loom::GeluKind::tanh, false},
                                         GradientCase{"bert.encoder-layer", loom::GeluKind::erf, true},
                                         GradientCase{"bert.pretraining-heads", loom::GeluKind::erf, false},
                                         GradientCase{"bert.pretraining-heads", loom::GeluKind::tanh, false},
                                         GradientCase{"bert.classifier-head", loom::GeluKind::erf, false},
                                         GradientCase{"bert.classifier-head", loom::GeluKind::erf, true},
                                         GradientCase{"bert.classifier-head", loom::GeluKind::erf, false, 1},
                                         GradientCase{"bert.classifier-head", loom::GeluKind::erf, true, 1},
                                         GradientCase{"bert.span-head", loom::GeluKind::erf, false},
                                         GradientCase{"roberta.embeddings", loom::GeluKind::erf, false},
                                         GradientCase{"roberta.embeddings", loom::GeluKind::erf, true},
                                         GradientCase{"roberta.encoder-layer", loom::GeluKind::erf, false},
                                         GradientCase{"roberta.pretraining-heads", loom::GeluKind::tanh, false},
                                         GradientCase{"roberta.classifier-head", loom::GeluKind::erf, false},
                                         GradientCase{"roberta.classifier-head", loom::GeluKind::erf, true},
                                         GradientCase{"roberta.classifier-head", loom::GeluKind::erf, false, 1},
                                         GradientCase{"roberta.span-head", loom::GeluKind::erf, false}),
                         case_name);

// The regression head's loss is Hugging Face's MSELoss over its single logit column, and a batch
// of class indices is refused with a message instead of being read as floats.
TEST(ClassifierHeadRegression, LossIsTheMeanSquaredErrorOfTheLogits) {
  loom::ModelConfig config = small_config();
  config.num_labels = 1;
  SmallBatch batch = small_batch(config);
  batch.regression = true;
  BlockHarness h("bert.classifier-head", config, loom::DType::f32, batch);
  h.randomize(4);
  const double loss = h.objective(false);
  const loom::BlockOutput logits = h.block().output(0);
  ASSERT_EQ(logits.value.shape[0], 2);
  ASSERT_EQ(logits.value.shape[1], 1);
  const float* values = static_cast<const float*>(logits.value.data);
  double expected = 0;
  for (size_t r = 0; r < 2; ++r) expected += std::pow(values[r] - batch.targets[r], 2.0) / 2.0;
  EXPECT_NEAR(loss, expected, 1e-5 * std::max(1.0, expected));
  EXPECT_GT(expected, 1e-3);  // the targets are not what a random head predicts

  batch.regression = false;  // class indices for a one-output head
  BlockHarness wrong("bert.classifier-head", config, loom::DType::f32, batch);
  wrong.randomize(4);
  try {
    wrong.objective(false);
    ADD_FAILURE() << "i32 labels were accepted as regression targets";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("f32 regression targets"), std::string::npos) << e.what();
  }
}

// Relative L2 distance ‖a − b‖ / ‖b‖.
double relative_distance(const float* a, const float* b, size_t n) {
  double diff = 0.0, norm = 0.0;
  for (size_t e = 0; e < n; ++e) {
    diff += (static_cast<double>(a[e]) - b[e]) * (static_cast<double>(a[e]) - b[e]);
    norm += static_cast<double>(b[e]) * b[e];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

class BlockBf16 : public testing::TestWithParam<const char*> {};

// bf16 rounds GEMM operands to 8 significant bits: outputs and gradients stay within a few
// percent (relative L2) of the f32 block on the same values.
TEST_P(BlockBf16, AgreesWithF32WithinBf16Tolerance) {
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  BlockHarness exact(GetParam(), config, loom::DType::f32, batch);
  BlockHarness rounded(GetParam(), config, loom::DType::bf16, batch);
  exact.randomize(5);
  rounded.randomize(5);
  const double exact_value = exact.gradients(false);
  const double rounded_value = rounded.gradients(false);
  EXPECT_NEAR(rounded_value, exact_value, 2e-2 * std::fabs(exact_value) + 1e-2);
  for (size_t i = 0; i < exact.parameter_count(); ++i) {
    // Key biases and the span head's biases have an exactly-zero gradient (softmax is invariant to
    // a shift): only rounding noise is left on both sides, so there is nothing to compare.
    double norm = 0;
    for (size_t e = 0; e < exact.count(i); ++e)
      norm += static_cast<double>(exact.gradient(i)[e]) * exact.gradient(i)[e];
    if (std::sqrt(norm) < 1e-4) continue;
    EXPECT_LT(relative_distance(rounded.gradient(i), exact.gradient(i), exact.count(i)), 5e-2)
        << exact.spec(i).name;
  }
  if (exact.block().role() != loom::BlockRole::embeddings) {
    EXPECT_LT(relative_distance(rounded.input_gradient(), exact.input_gradient(), exact.input_count()), 5e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlockBf16,
                         testing::Values("bert.embeddings", "bert.encoder-layer", "bert.pretraining-heads",
                                         "bert.classifier-head", "bert.span-head", "roberta.embeddings",
                                         "roberta.pretraining-heads", "roberta.classifier-head"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace loom_bert_test
