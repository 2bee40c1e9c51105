// The model FLOP count against an independent hand count and the GPU benchmark's figure: PyTorch's
// bert-large at seq 128, batch 256, 1,301 seq/s is "32% of 989 TFLOP/s".
#include <gtest/gtest.h>

#include "model/training_flops.hpp"

namespace loom::host {
namespace {

loom::ModelConfig bert_large() {
  loom::ModelConfig c = loom::default_model_config();
  c.hidden_size = 1024;
  c.num_hidden_layers = 24;
  c.num_attention_heads = 16;
  c.intermediate_size = 4096;
  return c;
}

TEST(TrainingFlops, TinyConfigMatchesAHandCount) {
  loom::ModelConfig c = loom::default_model_config();
  c.vocab_size = 10;
  c.hidden_size = 4;
  c.num_hidden_layers = 1;
  c.intermediate_size = 8;
  // T = 3, P = 2: projections 2·3·4·16 = 384, attention 4·9·4 = 144, FFN 2·3·2·4·8 = 384,
  // pooler + NSP 2·16 + 2·8 = 48, MLM 2·2·16 + 2·2·4·10 = 224.
  EXPECT_DOUBLE_EQ(bert_forward_flops(c, 3, 2), 384 + 144 + 384 + 48 + 224);
  EXPECT_DOUBLE_EQ(bert_training_flops(c, 3, 2), 3.0 * (384 + 144 + 384 + 48 + 224));
}

TEST(TrainingFlops, BertLargeAtPyTorchsRateIs32PercentOfH100Peak) {
  const double flops_per_second = 1301.0 * bert_training_flops(bert_large(), 128, 20);
  EXPECT_NEAR(flops_per_second / 989e12, 0.32, 0.005);
}

}  // namespace
}  // namespace loom::host
