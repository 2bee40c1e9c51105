// The MLM decoder's GEMMs split where the backend asks for aligned extents (GemmExtentAlignment):
// backend/cpu does not offer it, so these tests answer for it with a multiple of their own and run
// the pretraining heads split and unsplit on the same values, in bf16 and f16 compute.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "block_harness.hpp"
#include "loom/sdk/ops/gemm_extent_alignment.hpp"

namespace loom_bert_test {
namespace {

/// A GemmExtentAlignment of a chosen multiple, whatever the dtype.
struct FixedMultiple final : loom::GemmExtentAlignment {
  int64_t multiple = 1;
  int64_t gemm_extent_multiple(loom::DType) const override { return multiple; }
};
FixedMultiple g_alignment;

/// backend/cpu's named interfaces, and g_alignment as its GemmExtentAlignment.
void* interfaces_with_alignment(void* object, const char* name, uint32_t version) noexcept {
  if (name != nullptr && std::strcmp(name, loom::GemmExtentAlignment::kInterfaceName) == 0 &&
      version == loom::GemmExtentAlignment::kInterfaceVersion)
    return static_cast<loom::GemmExtentAlignment*>(&g_alignment);
  return cpu_backend_component().interfaces()(object, name, version);
}

size_t parameter_index(const BlockHarness& h, const std::string& name) {
  for (size_t i = 0; i < h.parameter_count(); ++i)
    if (h.spec(i).name == name) return i;
  throw std::runtime_error("no parameter " + name);
}

/// The block's output `index` (host-addressable on backend/cpu) as [rows, cols] floats.
std::vector<float> output_rows(const BlockHarness& h, size_t index) {
  const loom::Tensor t = h.block().output(index).value;
  std::vector<float> out;
  for (int64_t r = 0; r < t.shape[0]; ++r) {
    const auto* row = static_cast<const float*>(t.data) + r * t.strides[0];
    out.insert(out.end(), row, row + t.shape[1]);
  }
  return out;
}
std::vector<int32_t> correct(const BlockHarness& h) {
  const loom::Tensor t = h.block().output(4).value;
  const auto* v = static_cast<const int32_t*>(t.data);
  return std::vector<int32_t>(v, v + t.shape[0]);
}

struct Case {
  loom::DType compute;
  int64_t multiple;
};

class DecoderAlignment : public testing::TestWithParam<Case> {};

// Split at m, the forward GEMM and the weight-gradient GEMM compute every output element from the
// same products as unsplit, and the extra work is only the remainder's small GEMMs: loss, logits,
// prediction verdicts and the decoder's weight and bias gradients agree bit for bit. d_rows sums
// its V products as two partial sums (the aligned classes, then the remainder), a different f32
// order: its elements differ by a few f32 ulps of Σ|products| (≤ V·2⁻²⁴ relative, 3·10⁻⁶ for
// V = 53), and after the cast of the transform's gradient to 16 bits an element can land one
// 16-bit ulp away (2⁻⁸ in bf16, 2⁻¹¹ in f16) — which the transform's gradients and the input
// gradient inherit, scaled by operands no larger than the largest gradient they sum into. So the
// bound is 2 ulps of the compute dtype relative to each tensor's largest element.
TEST_P(DecoderAlignment, SplitDecoderGemmsMatchUnsplit) {
  const Case c = GetParam();
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  g_alignment.multiple = c.multiple;
  ASSERT_NE(config.vocab_size % c.multiple, 0) << "the case must split the vocabulary";
  BlockHarness unsplit("bert.pretraining-heads", config, c.compute, batch, false, true, true);
  BlockHarness split("bert.pretraining-heads", config, c.compute, batch, false, true, true,
                     &interfaces_with_alignment);
  unsplit.randomize(11);
  split.randomize(11);
  const double unsplit_loss = unsplit.gradients(true);
  const double split_loss = split.gradients(true);

  EXPECT_EQ(split_loss, unsplit_loss);
  const std::vector<float> split_logits = output_rows(split, 3), unsplit_logits = output_rows(unsplit, 3);
  ASSERT_EQ(split_logits.size(), static_cast<size_t>(4 * config.vocab_size));
  EXPECT_EQ(split_logits, unsplit_logits);
  EXPECT_EQ(correct(split), correct(unsplit));

  const size_t decoder = parameter_index(split, "cls.predictions.decoder.weight");
  const size_t decoder_bias = parameter_index(split, "cls.predictions.bias");
  for (size_t i : {decoder, decoder_bias})
    EXPECT_EQ(0, std::memcmp(split.gradient(i), unsplit.gradient(i), split.count(i) * 4))
        << split.spec(i).name;

  const double ulp = c.compute == loom::DType::bf16 ? 0x1p-8 : 0x1p-11;
  for (size_t i = 0; i < split.parameter_count(); ++i)
    EXPECT_LT(max_relative_difference(split.gradient(i), unsplit.gradient(i), split.count(i)), 2 * ulp)
        << split.spec(i).name;
  EXPECT_LT(max_relative_difference(split.input_gradient(), unsplit.input_gradient(), split.input_count()),
            2 * ulp);

  // Nothing written past any gradient: the alignment gap after each parameter's gradient in the
  // flat buffer still holds the sentinel (after the decoder weight's [V, H] the next gradient
  // follows within 16 floats, so a row past it would reach into it).
  for (size_t i = 0; i < split.parameter_count(); ++i)
    for (float v : split.gradient_gap(i)) ASSERT_EQ(v, BlockHarness::kGapSentinel) << split.spec(i).name;
}

INSTANTIATE_TEST_SUITE_P(Multiples, DecoderAlignment,
                         testing::Values(Case{loom::DType::bf16, 8}, Case{loom::DType::f16, 8},
                                         Case{loom::DType::bf16, 32}, Case{loom::DType::f16, 32}),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(loom::dtype_name(info.param.compute)) + "_multiple_" +
                                  std::to_string(info.param.multiple);
                         });

// Without the interface, or with a multiple of 1 (f32 on backend/cuda), the decoder runs one GEMM
// per product as before: the same bits as backend/cpu's unsplit head.
TEST(DecoderAlignment, MultipleOneKeepsOneGemm) {
  const loom::ModelConfig config = small_config();
  const SmallBatch batch = small_batch(config);
  g_alignment.multiple = 1;
  BlockHarness plain("bert.pretraining-heads", config, loom::DType::bf16, batch);
  BlockHarness asked("bert.pretraining-heads", config, loom::DType::bf16, batch, false, true, false,
                     &interfaces_with_alignment);
  plain.randomize(3);
  asked.randomize(3);
  EXPECT_EQ(asked.gradients(true), plain.gradients(true));
  for (size_t i = 0; i < plain.parameter_count(); ++i)
    EXPECT_EQ(0, std::memcmp(asked.gradient(i), plain.gradient(i), plain.count(i) * 4)) << plain.spec(i).name;
  EXPECT_EQ(0, std::memcmp(asked.input_gradient(), plain.input_gradient(), plain.input_count() * 4));
}

}  // namespace
}  // namespace loom_bert_test
