// HiddenCopy on the encoder layer: with its input's 16-bit copy handed over and its output's asked
// for, a layer gives the same bits as one that casts its own input (output, every gradient, the
// input gradient), writes its output's copy as cast(output), keeps the input's copy out of its
// saved bytes, and reads the copy it is given; in f32 compute it offers none.
#include <gtest/gtest.h>

#include <cstring>

#include "block_harness.hpp"
#include "loom/sdk/hidden_copy.hpp"

namespace loom_bert_test {
namespace {

/// a and b bit for bit: n floats.
bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

/// `values` rounded once to `dtype` (backend/cpu's cast) and widened back.
std::vector<float> rounded(const std::vector<float>& values, loom::DType dtype) {
  loom::Backend& backend = cpu_backend();
  const int64_t n = static_cast<int64_t>(values.size());
  loom::Buffer wide(backend, values.size() * 4), narrow(backend, values.size() * loom::dtype_size(dtype));
  std::memcpy(wide.data(), values.data(), values.size() * 4);
  const loom::Tensor f32 = loom::Tensor::contiguous(wide.data(), loom::DType::f32, {n});
  const loom::Tensor copy = loom::Tensor::contiguous(narrow.data(), dtype, {n});
  backend.cast(f32, copy);
  backend.cast(copy, f32);
  std::vector<float> out(values.size());
  std::memcpy(out.data(), wide.data(), values.size() * 4);
  return out;
}

size_t aligned(size_t bytes) {
  return (bytes + loom::Backend::kAlignment - 1) / loom::Backend::kAlignment * loom::Backend::kAlignment;
}

TEST(HiddenCopy, HandedOverCopiesGiveTheLayerTheSameBits) {
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  for (const loom::DType compute : {loom::DType::bf16, loom::DType::f16})
    for (const bool fused : {false, true}) {
      SCOPED_TRACE(std::string(loom::dtype_name(compute)) + (fused ? ", fused attention" : ""));
      BlockHarness own("bert.encoder-layer", config, compute, batch, fused);
      BlockHarness handed("bert.encoder-layer", config, compute, batch, fused);
      const size_t own_saved = own.saved_bytes();
      handed.use_hidden_copies(true, true);
      EXPECT_EQ(handed.saved_bytes(),
                own_saved - aligned(static_cast<size_t>(handed.input_count()) * loom::dtype_size(compute)))
          << "the input's copy leaves the saved bytes";
      own.randomize(7);
      handed.randomize(7);
      own.gradients(true);
      handed.gradients(true);
      const std::vector<float> y_own = own.output(), y_handed = handed.output();
      EXPECT_TRUE(same_bits(y_handed.data(), y_own.data(), y_own.size())) << "output";
      for (size_t i = 0; i < own.parameter_count(); ++i)
        EXPECT_TRUE(same_bits(handed.gradient(i), own.gradient(i), own.count(i))) << own.spec(i).name;
      EXPECT_TRUE(same_bits(handed.input_gradient(), own.input_gradient(), own.input_count())) << "input gradient";
      // The output's copy is the output rounded once.
      const std::vector<float> expected = rounded(y_own, compute), copy = handed.output_copy();
      EXPECT_TRUE(same_bits(copy.data(), expected.data(), expected.size())) << "output copy";
    }
}

TEST(HiddenCopy, TheLayerReadsTheInputCopyItIsGiven) {
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  BlockHarness own("bert.encoder-layer", config, loom::DType::bf16, batch);
  BlockHarness handed("bert.encoder-layer", config, loom::DType::bf16, batch);
  handed.use_hidden_copies(true, false);
  handed.replace_input_copy(0.0f);
  own.randomize(9);
  handed.randomize(9);
  own.objective(false);
  handed.objective(false);
  const std::vector<float> y_own = own.output(), y_handed = handed.output();
  EXPECT_FALSE(same_bits(y_handed.data(), y_own.data(), y_own.size()))
      << "a zero input copy left the output unchanged: the layer cast its own";
}

TEST(HiddenCopy, F32ComputeOffersNone) {
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  for (const loom::DType compute : {loom::DType::f32, loom::DType::bf16}) {
    BlockHarness layer("bert.encoder-layer", config, compute, batch);
    auto* copies = layer.component().find<loom::HiddenCopy>();
    ASSERT_NE(copies, nullptr);
    EXPECT_EQ(copies->writes_output_copy(), compute != loom::DType::f32);
    EXPECT_EQ(copies->reads_input_copy(), compute != loom::DType::f32);
  }
}

}  // namespace
}  // namespace loom_bert_test
