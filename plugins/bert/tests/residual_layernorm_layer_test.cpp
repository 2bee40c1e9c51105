// The encoder layer on backend/cpu, which offers ResidualLayerNorm, against the same layer seeing
// none of the backend's named interfaces (bias_add, dropout, add and layernorm as separate ops):
// output, every parameter gradient and the input gradient equal bit for bit, in f32 and bf16
// compute, training (dropout on) and not.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "block_harness.hpp"
#include "loom/sdk/ops/residual_layernorm.hpp"

namespace loom_bert_test {
namespace {

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

void expect_identical_layers(loom::DType compute, bool training) {
  SCOPED_TRACE(std::string(loom::dtype_name(compute)) + (training ? " training" : " evaluation"));
  loom::ModelConfig config = small_config();
  config.hidden_dropout_prob = 0.3f;  // enough dropped elements in a 2 × 7 × 24 activation
  const SmallBatch batch = small_batch(config);
  BlockHarness separate("bert.encoder-layer", config, compute, batch, false, false);
  BlockHarness fused("bert.encoder-layer", config, compute, batch, false, true);
  separate.randomize(29);
  fused.randomize(29);
  const double separate_value = separate.gradients(training);
  const double fused_value = fused.gradients(training);
  EXPECT_EQ(fused_value, separate_value);
  const std::vector<float> a = fused.output(), b = separate.output();
  EXPECT_TRUE(same_bits(a.data(), b.data(), a.size())) << "output";
  for (size_t i = 0; i < fused.parameter_count(); ++i)
    EXPECT_TRUE(same_bits(fused.gradient(i), separate.gradient(i), fused.count(i))) << fused.spec(i).name;
  EXPECT_TRUE(same_bits(fused.input_gradient(), separate.input_gradient(), fused.input_count()))
      << "input gradient";
}

// Otherwise the comparisons below would compare the separate-ops path with itself.
TEST(ResidualLayerNormLayer, BackendOffersTheOp) {
  EXPECT_NE(cpu_backend_component(1, false).find<loom::ResidualLayerNorm>(), nullptr);
}

TEST(ResidualLayerNormLayer, SameAsSeparateOpsInF32) {
  expect_identical_layers(loom::DType::f32, true);
  expect_identical_layers(loom::DType::f32, false);
}

TEST(ResidualLayerNormLayer, SameAsSeparateOpsInBf16) {
  expect_identical_layers(loom::DType::bf16, true);
  expect_identical_layers(loom::DType::bf16, false);
}

}  // namespace
}  // namespace loom_bert_test
