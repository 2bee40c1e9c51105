// The encoder layer on a backend that offers fused attention (backend/cpu with
// fused_attention = true) against the same layer through the unfused ops: same output and same
// gradients for the same parameters, with padding and with dropout (both paths draw the same
// Philox bits for the attention probabilities), and finite differences of the fused layer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "block_harness.hpp"
#include "loom/sdk/ops/fused_attention.hpp"

namespace loom_bert_test {
namespace {

void expect_same_layer(loom::DType compute, bool training, double bound) {
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  BlockHarness unfused("bert.encoder-layer", config, compute, batch, false);
  BlockHarness fused("bert.encoder-layer", config, compute, batch, true);
  unfused.randomize(17);
  fused.randomize(17);
  const double unfused_value = unfused.gradients(training);
  const double fused_value = fused.gradients(training);
  const std::vector<float> b = unfused.output();
  // The objective is Σ w·y with random signs: it can be far smaller than its terms, so its
  // difference is bounded relative to their size (Σ |y|, |w| ~ 1), not to its own value.
  double terms = 0;
  for (float y : b) terms += std::fabs(static_cast<double>(y));
  EXPECT_NEAR(fused_value, unfused_value, bound * terms / std::sqrt(static_cast<double>(b.size())) + 1e-6);
  expect_same_results(fused, unfused, bound);
}

// backend/cpu offers fused attention as a named interface whatever its options, and the option
// decides whether the layer takes the fused path: otherwise the comparisons below would compare
// the unfused path with itself.
TEST(FusedAttentionLayer, BackendOffersFusedAttentionAndTheOptionSelectsIt) {
  loom::FusedAttention* fused = cpu_backend_component(1, true).find<loom::FusedAttention>();
  loom::FusedAttention* unfused = cpu_backend_component(1, false).find<loom::FusedAttention>();
  ASSERT_NE(fused, nullptr);
  ASSERT_NE(unfused, nullptr);
  EXPECT_TRUE(fused->fused_attention(8, 16));
  EXPECT_FALSE(unfused->fused_attention(8, 16));
}

TEST(FusedAttentionLayer, MatchesUnfusedLayerInF32) {
  expect_same_layer(loom::DType::f32, false, 1e-5);
}

TEST(FusedAttentionLayer, MatchesUnfusedLayerInF32WithDropout) {
  expect_same_layer(loom::DType::f32, true, 1e-5);
}

// bf16: the unfused path rounds the probabilities to bf16 before the product with v, the fused
// one keeps them in f32, so the two differ by bf16 rounding (8 significant bits).
TEST(FusedAttentionLayer, MatchesUnfusedLayerInBf16WithinRounding) {
  expect_same_layer(loom::DType::bf16, true, 3e-2);
}

TEST(FusedAttentionLayer, GradientsMatchFiniteDifferences) {
  const loom::ModelConfig config = small_config();
  BlockHarness h("bert.encoder-layer", config, loom::DType::f32, small_batch(config), true);
  h.randomize(23);
  h.gradients(true);
  // The input and the query weight: both reach the fused op's backward (through q, k and v).
  struct Probe {
    float* value;
    double analytic;
  };
  std::vector<Probe> probes;
  for (size_t e : {size_t{0}, size_t{29}, size_t{101}})
    probes.push_back({h.input() + e, h.input_gradient()[e]});
  for (size_t e : {size_t{3}, size_t{77}, size_t{250}}) probes.push_back({h.values(0) + e, h.gradient(0)[e]});
  for (const Probe& p : probes) {
    const float saved = *p.value;
    *p.value = saved + 1e-2f;
    const double plus = h.objective(true);
    *p.value = saved - 1e-2f;
    const double minus = h.objective(true);
    *p.value = saved;
    const double numeric = (plus - minus) / 2e-2;
    EXPECT_NEAR(numeric, p.analytic, 3e-3 + 2e-2 * std::max(std::fabs(numeric), std::fabs(p.analytic)));
  }
}

}  // namespace
}  // namespace loom_bert_test
