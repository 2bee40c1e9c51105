// The encoder layer's query/key/value projections as one GEMM (parameters adjacent in flat
// buffers, as the host lays them out) against three GEMMs (a buffer per parameter): the same
// output and gradients to rounding, in f32 and bf16, training and not; and the finite-difference
// gradients of the one-GEMM layer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "block_harness.hpp"

namespace loom_bert_test {
namespace {

// Hidden 32 (4 heads of 8): 32 floats of bias keep bq, bk, bv adjacent at the host's alignment.
loom::ModelConfig adjacent_config() {
  loom::ModelConfig config = small_config();
  config.hidden_size = 32;
  config.num_attention_heads = 4;
  config.hidden_dropout_prob = 0.2f;
  return config;
}

void expect_same_layer(loom::DType compute, bool training, double bound) {
  SCOPED_TRACE(std::string(loom::dtype_name(compute)) + (training ? " training" : " evaluation"));
  const loom::ModelConfig config = adjacent_config();
  const SmallBatch batch = small_batch(config);
  BlockHarness three("bert.encoder-layer", config, compute, batch, false, true, false);
  BlockHarness one("bert.encoder-layer", config, compute, batch, false, true, true);
  three.randomize(31);
  one.randomize(31);
  three.gradients(training);
  one.gradients(training);
  expect_same_results(one, three, bound);
}

TEST(QkvProjection, OneGemmMatchesThreeInF32) {
  expect_same_layer(loom::DType::f32, true, 1e-5);
  expect_same_layer(loom::DType::f32, false, 1e-5);
}

TEST(QkvProjection, OneGemmMatchesThreeInBf16) {
  expect_same_layer(loom::DType::bf16, true, 1e-2);
  expect_same_layer(loom::DType::bf16, false, 1e-2);
}

TEST(QkvProjection, OneGemmGradientsMatchFiniteDifferences) {
  loom::ModelConfig config = adjacent_config();
  config.hidden_dropout_prob = 0.0f;
  config.attention_probs_dropout_prob = 0.0f;
  BlockHarness h("bert.encoder-layer", config, loom::DType::f32, small_batch(config), false, true, true);
  h.randomize(37, 0.2f);
  h.gradients(false);
  // Central differences of the objective in f32 over a few elements of Wq, Wk, Wv, bq, bv and x.
  const double step = 1e-2;
  int checked = 0;
  for (size_t i = 0; i < h.parameter_count(); ++i) {
    const std::string name = h.spec(i).name;
    if (name.find("attention.self.") == std::string::npos || name.find("key.bias") != std::string::npos)
      continue;
    for (size_t e : {size_t{0}, h.count(i) / 2, h.count(i) - 1}) {
      const float original = h.values(i)[e];
      h.values(i)[e] = static_cast<float>(original + step);
      const double up = h.objective(false);
      h.values(i)[e] = static_cast<float>(original - step);
      const double down = h.objective(false);
      h.values(i)[e] = original;
      const double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(h.gradient(i)[e], numeric, 2e-2 * std::fabs(numeric) + 2e-3) << name << " element " << e;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 15);
}

}  // namespace
}  // namespace loom_bert_test
