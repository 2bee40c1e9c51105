// The modernbert blocks driven one at a time through the Block interface on backend/cpu (the bert
// tests' BlockHarness, given each block's index and a config.json):
// - every block's backward against central finite differences of its forward, for parameters AND
//   inputs: embeddings; the encoder layer as layer 0 (no attn_norm), as a global layer and as a
//   local layer whose window is shorter than the sequence, in both spellings of the attention
//   pattern, with and without biases; the MLM head with and without decoder.bias; the classifier
//   head with cls and mean pooling, classes and regression; the span head — dropout off (eval) and
//   on (training; the mask is a deterministic function of the Philox key, so finite differences see
//   the same mask), both GELU variants;
// - every dropout site is applied in training and ignored in evaluation;
// - bf16 and f16 compute against f32 on the same weights;
// - what a layer and the pooling read: only layer 0 lacks attn_norm, a local layer's query sees its
//   window only, mean pooling ignores padding positions, cls pooling reads position 0;
// - config refusals, each a loom::ConfigError naming the key and the file.
// The config is small and odd-sized: hidden 24, 3 heads (head size 8, even as rotary needs),
// intermediate 37, vocab 53, 3 layers; the batch is 2×7 with two padding positions in row 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "block_harness.hpp"
#include "loom/sdk/error.hpp"

namespace loom_modernbert_test {
namespace {

using loom_bert_test::BlockHarness;
using loom_bert_test::SmallBatch;

constexpr const char* kEmbeddings = "modernbert.embeddings";
constexpr const char* kLayer = "modernbert.encoder-layer";
constexpr const char* kMlm = "modernbert.pretraining-heads";
constexpr const char* kClassifier = "modernbert.classifier-head";
constexpr const char* kSpan = "modernbert.span-head";

constexpr int32_t kLayers = 3;
constexpr int32_t kHeadIndex = kLayers + 1;  // embeddings, three layers, head
constexpr const char* kSource = "tiny-modernbert/config.json";

loom::ModelConfig modern_config(int32_t num_labels = 3) {
  loom::ModelConfig c = loom_bert_test::small_config();
  c.num_hidden_layers = kLayers;
  c.num_labels = num_labels;
  return c;
}

// The config.json of the small model. Layer i is global when i mod 2 = 0: index 1 (layer 0) and
// index 3 (layer 2) are global, index 2 (layer 1) is local with |i − j| ≤ 4 / 2 = 2, shorter than
// the 7 positions. Small rotary bases make every frequency pair turn visibly over 7 positions.
nlohmann::json modern_json(const loom::ModelConfig& c) {
  return {{"model_type", "modernbert"},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"max_position_embeddings", c.max_position_embeddings},
          {"pad_token_id", c.pad_token_id},
          {"num_labels", c.num_labels},
          {"hidden_activation", "gelu"},
          {"classifier_activation", "gelu"},
          {"norm_eps", 1e-5},
          {"global_attn_every_n_layers", 2},
          {"local_attention", 4},
          {"global_rope_theta", 1000.0},
          {"local_rope_theta", 100.0}};
}

// The keys a case sets over modern_json.
constexpr const char* kTanh =
    R"({"hidden_activation": "gelu_pytorch_tanh", "classifier_activation": "gelu_pytorch_tanh"})";
constexpr const char* kBiases =
    R"({"attention_bias": true, "mlp_bias": true, "norm_bias": true, "classifier_bias": true})";
constexpr const char* kDropouts =
    R"({"embedding_dropout": 0.1, "attention_dropout": 0.2, "mlp_dropout": 0.15, "classifier_dropout": 0.25})";

nlohmann::json with(nlohmann::json file, std::initializer_list<const char*> patches) {
  for (const char* patch : patches) file.merge_patch(nlohmann::json::parse(patch));
  return file;
}

BlockHarness make_block(const char* component, const loom::ModelConfig& config, loom::DType compute,
                        const SmallBatch& batch, int32_t index, const nlohmann::json& file) {
  loom_bert_test::BlockPlacement placement;
  placement.index = index;
  placement.config_json = file.dump();
  placement.config_source = kSource;
  return BlockHarness(component, config, compute, batch, false, true, false, nullptr, placement);
}

SmallBatch batch_for(const loom::ModelConfig& config) {
  SmallBatch batch = loom_bert_test::small_batch(config);
  batch.regression = config.num_labels == 1;
  return batch;
}

// ---------------------------------------------------------------------------------------------
// Finite differences.

struct GradientCase {
  const char* name;
  const char* component;
  int32_t index;
  bool training;            // true: the dropouts of kDropouts are on
  const char* keys = "{}";  // config.json keys over modern_json
  const char* more = "{}";  // and more of them
  int32_t num_labels = 3;   // 1: the classifier head as a regression head
};

void PrintTo(const GradientCase& c, std::ostream* os) {
  *os << c.name;
}

// Elements to probe: a few random ones plus the one with the largest analytic gradient. `skip`
// leaves out [skip_begin, skip_end) (the token table's pad row, see below).
std::vector<size_t> probes(const std::vector<float>& gradient, std::mt19937& rng, size_t skip_begin = 0,
                           size_t skip_end = 0) {
  std::vector<size_t> picks;
  std::uniform_int_distribution<size_t> pick(0, gradient.size() - 1);
  while (picks.size() < 6) {
    const size_t e = pick(rng);
    if (e < skip_begin || e >= skip_end) picks.push_back(e);
  }
  size_t largest = skip_begin == 0 && skip_end > 0 ? skip_end : 0;
  for (size_t e = 0; e < gradient.size(); ++e)
    if ((e < skip_begin || e >= skip_end) && std::fabs(gradient[e]) > std::fabs(gradient[largest]))
      largest = e;
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

// The difference quotient's truncation error is O(step²·f''') and the objective's f32 rounding
// divided by 2·step adds ~1e-4: an absolute 3e-3 plus 2 % of the value (BERT's block test's bounds).
void expect_close(double numeric, double analytic, const std::string& what) {
  const double tolerance = 3e-3 + 2e-2 * std::max(std::fabs(numeric), std::fabs(analytic));
  EXPECT_NEAR(numeric, analytic, tolerance) << what;
}

class ModernBertGradient : public testing::TestWithParam<GradientCase> {};

TEST_P(ModernBertGradient, MatchesFiniteDifferencesForParametersAndInputs) {
  const GradientCase& c = GetParam();
  const loom::ModelConfig config = modern_config(c.num_labels);
  const SmallBatch batch = batch_for(config);
  nlohmann::json file = with(modern_json(config), {c.keys, c.more});
  if (c.training) file.merge_patch(nlohmann::json::parse(kDropouts));
  BlockHarness h = make_block(c.component, config, loom::DType::f32, batch, c.index, file);
  h.randomize(11);
  h.gradients(c.training);
  std::mt19937 rng(3);

  std::vector<std::vector<float>> analytic;
  for (size_t i = 0; i < h.parameter_count(); ++i)
    analytic.emplace_back(h.gradient(i), h.gradient(i) + h.count(i));
  const bool has_input = h.block().role() != loom::BlockRole::embeddings;
  std::vector<float> input_analytic;
  if (has_input) input_analytic.assign(h.input_gradient(), h.input_gradient() + h.input_count());

  size_t nonzero = 0;
  for (size_t i = 0; i < h.parameter_count(); ++i) {
    // The pad token's embedding row reaches the output at padding positions, but sends no gradient
    // back (Hugging Face's padding_idx): finite differences would see what backward leaves out by
    // design, so that row is not probed and its gradient must be exactly zero.
    size_t skip_begin = 0, skip_end = 0;
    if (std::string(h.spec(i).name) == "tok_embeddings.weight") {
      skip_begin = static_cast<size_t>(config.pad_token_id * config.hidden_size);
      skip_end = skip_begin + static_cast<size_t>(config.hidden_size);
      for (size_t e = skip_begin; e < skip_end; ++e)
        ASSERT_EQ(analytic[i][e], 0.0f) << "pad row, element " << e;
    }
    for (size_t e : probes(analytic[i], rng, skip_begin, skip_end)) {
      const double numeric = finite_difference(h, h.values(i) + e, c.training);
      expect_close(numeric, analytic[i][e], std::string(h.spec(i).name) + "[" + std::to_string(e) + "]");
      nonzero += std::fabs(analytic[i][e]) > 1e-4 ? 1 : 0;
    }
  }
  EXPECT_GT(nonzero, h.parameter_count()) << "most probed parameter gradients should be non-zero";
  if (has_input) {
    size_t input_nonzero = 0;
    for (size_t e : probes(input_analytic, rng)) {
      const double numeric = finite_difference(h, h.input() + e, c.training);
      expect_close(numeric, input_analytic[e], "input[" + std::to_string(e) + "]");
      input_nonzero += std::fabs(input_analytic[e]) > 1e-4 ? 1 : 0;
    }
    EXPECT_GT(input_nonzero, 0u);
  }
}

constexpr const char* kMean = R"({"classifier_pooling": "mean"})";
constexpr const char* kNoDecoderBias = R"({"decoder_bias": false})";
constexpr const char* kNormBias = R"({"norm_bias": true})";
// The newer spelling: layer 2 (index 3) local, where global_attn_every_n_layers = 2 makes it global.
constexpr const char* kLayerTypes =
    R"({"layer_types": ["full_attention", "full_attention", "sliding_attention"]})";

INSTANTIATE_TEST_SUITE_P(
    Blocks, ModernBertGradient,
    testing::Values(
        GradientCase{"Embeddings_eval", kEmbeddings, 0, false},
        GradientCase{"Embeddings_tanh_norm_bias_dropout", kEmbeddings, 0, true, kTanh, kNormBias},
        GradientCase{"Layer0_eval", kLayer, 1, false},
        GradientCase{"Layer0_tanh_eval", kLayer, 1, false, kTanh},
        GradientCase{"Layer0_biases_dropout", kLayer, 1, true, kBiases},
        GradientCase{"GlobalLayer_eval", kLayer, 3, false},
        GradientCase{"GlobalLayer_tanh_biases_eval", kLayer, 3, false, kTanh, kBiases},
        GradientCase{"GlobalLayer_dropout", kLayer, 3, true},
        GradientCase{"GlobalLayer_biases_dropout", kLayer, 3, true, kBiases},
        GradientCase{"LocalLayer_eval", kLayer, 2, false},
        GradientCase{"LocalLayer_tanh_biases_eval", kLayer, 2, false, kTanh, kBiases},
        GradientCase{"LocalLayer_dropout", kLayer, 2, true},
        GradientCase{"LocalLayer_tanh_biases_dropout", kLayer, 2, true, kTanh, kBiases},
        GradientCase{"LocalLayerByLayerTypes_biases_eval", kLayer, 3, false, kLayerTypes, kBiases},
        GradientCase{"LocalLayerByLayerTypes_tanh_dropout", kLayer, 3, true, kLayerTypes, kTanh},
        GradientCase{"MlmHead_eval", kMlm, kHeadIndex, false},
        GradientCase{"MlmHead_tanh_eval", kMlm, kHeadIndex, false, kTanh},
        GradientCase{"MlmHead_no_decoder_bias_biases_eval", kMlm, kHeadIndex, false, kNoDecoderBias, kBiases},
        GradientCase{"MlmHead_no_decoder_bias_dropout", kMlm, kHeadIndex, true, kNoDecoderBias},
        GradientCase{"ClsClassifier_eval", kClassifier, kHeadIndex, false},
        GradientCase{"ClsClassifier_tanh_eval", kClassifier, kHeadIndex, false, kTanh},
        GradientCase{"ClsClassifier_biases_dropout", kClassifier, kHeadIndex, true, kBiases},
        GradientCase{"MeanClassifier_eval", kClassifier, kHeadIndex, false, kMean},
        GradientCase{"MeanClassifier_tanh_dropout", kClassifier, kHeadIndex, true, kMean, kTanh},
        GradientCase{"MeanClassifier_biases_dropout", kClassifier, kHeadIndex, true, kMean, kBiases},
        GradientCase{"ClsRegression_eval", kClassifier, kHeadIndex, false, "{}", "{}", 1},
        GradientCase{"ClsRegression_tanh_dropout", kClassifier, kHeadIndex, true, kTanh, "{}", 1},
        GradientCase{"MeanRegression_eval", kClassifier, kHeadIndex, false, kMean, "{}", 1},
        GradientCase{"MeanRegression_biases_dropout", kClassifier, kHeadIndex, true, kMean, kBiases, 1},
        GradientCase{"SpanHead_eval", kSpan, kHeadIndex, false},
        GradientCase{"SpanHead_tanh_eval", kSpan, kHeadIndex, false, kTanh},
        GradientCase{"SpanHead_biases_dropout", kSpan, kHeadIndex, true, kBiases}),
    [](const testing::TestParamInfo<GradientCase>& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Dropout: every site is wired (training with one rate set changes the result, evaluation ignores
// it), so the dropout cases above check a mask that is really applied.

struct DropoutCase {
  const char* name;
  const char* component;
  int32_t index;
  const char* key;
  const char* keys = "{}";
};

void PrintTo(const DropoutCase& c, std::ostream* os) {
  *os << c.name;
}

class ModernBertDropout : public testing::TestWithParam<DropoutCase> {};

TEST_P(ModernBertDropout, TrainingAppliesTheRateAndEvaluationIgnoresIt) {
  const DropoutCase& c = GetParam();
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  const nlohmann::json plain = with(modern_json(config), {c.keys});
  nlohmann::json dropped = plain;
  dropped[c.key] = 0.3;
  BlockHarness without = make_block(c.component, config, loom::DType::f32, batch, c.index, plain);
  BlockHarness with_rate = make_block(c.component, config, loom::DType::f32, batch, c.index, dropped);
  without.randomize(8);
  with_rate.randomize(8);
  EXPECT_EQ(with_rate.objective(false), without.objective(false)) << c.key << " acts in evaluation";
  const double reference = without.objective(true);
  EXPECT_EQ(reference, without.objective(false)) << "no rate set, yet training differs";
  EXPECT_GT(std::fabs(with_rate.objective(true) - reference), 1e-4 * std::max(1.0, std::fabs(reference)))
      << c.key << " has no effect in training";
}

INSTANTIATE_TEST_SUITE_P(
    Sites, ModernBertDropout,
    testing::Values(DropoutCase{"Embeddings", kEmbeddings, 0, "embedding_dropout"},
                    DropoutCase{"LocalLayerAttention", kLayer, 2, "attention_dropout"},
                    DropoutCase{"LocalLayerMlp", kLayer, 2, "mlp_dropout"},
                    DropoutCase{"GlobalLayerAttention", kLayer, 1, "attention_dropout"},
                    DropoutCase{"GlobalLayerMlp", kLayer, 1, "mlp_dropout"},
                    DropoutCase{"ClsClassifier", kClassifier, kHeadIndex, "classifier_dropout"},
                    DropoutCase{"MeanClassifier", kClassifier, kHeadIndex, "classifier_dropout", kMean},
                    DropoutCase{"SpanHead", kSpan, kHeadIndex, "classifier_dropout"}),
    [](const testing::TestParamInfo<DropoutCase>& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// 16-bit compute against f32.

struct PrecisionCase {
  const char* name;
  const char* component;
  int32_t index;
  bool training;  // true: the dropouts of kDropouts are on (the same masks in every dtype)
  const char* keys = "{}";
  const char* more = "{}";
  int32_t num_labels = 3;
};

void PrintTo(const PrecisionCase& c, std::ostream* os) {
  *os << c.name;
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

double l2(const float* a, size_t n) {
  double norm = 0.0;
  for (size_t e = 0; e < n; ++e) norm += static_cast<double>(a[e]) * a[e];
  return std::sqrt(norm);
}

// The block's result after forward: the hidden output of embeddings and layers; a head's logits
// (every output named "...logits": the MLM head's at the labelled rows, the classifier's, the span
// head's start and end), since a head's objective is its loss alone.
std::vector<float> result(const BlockHarness& h) {
  if (h.block().role() != loom::BlockRole::head) return h.output();
  std::vector<float> values;
  for (size_t i = 0; i < h.block().output_count(); ++i) {
    const loom::BlockOutput out = h.block().output(i);
    if (std::string(out.name).find("logits") == std::string::npos) continue;
    const loom::Tensor& t = out.value;
    const float* data = static_cast<const float*>(t.data);
    if (t.ndim != 2) throw std::runtime_error(std::string(out.name) + ": expected 2 dimensions");
    for (int64_t r = 0; r < t.shape[0];
         ++r)  // possibly strided: the MLM head's rows of the padded vocabulary
      for (int64_t k = 0; k < t.shape[1]; ++k) values.push_back(data[r * t.strides[0] + k * t.strides[1]]);
  }
  return values;
}

// Tolerances (relative L2 against f32 on the same master values). Only GEMM operands are rounded
// to the compute dtype (unit roundoff u = 2⁻⁸ for bf16, 2⁻¹¹ for f16); sums, norms, softmax and
// every gradient stay f32. A result passes through a handful of rounded operands (the input's and
// the weight's copy per GEMM, the layer's GEMMs forward and their transposes backward), each
// adding an error of about u relative that adds up in quadrature over the dot products, so a few
// u is expected; measured here at most 2.0·10⁻² in bf16 (the local layer's gradients) and
// 3.5·10⁻³ in f16 (the regression head's), roughly the ratio of the two roundoffs. The bounds are 5·10⁻²
// in bf16 (BERT's) and, scaled down by the 8× smaller roundoff, 1·10⁻² in f16: 2.5–3× the measured
// worst, while a wrong operand (another activation's copy, an f32 value in place of its rounded
// copy's, a missing cast) moves a gradient by tens of percent.
double tolerance(loom::DType dtype) {
  return dtype == loom::DType::bf16 ? 5e-2 : 1e-2;
}

class ModernBertPrecision : public testing::TestWithParam<std::tuple<PrecisionCase, loom::DType>> {};

TEST_P(ModernBertPrecision, AgreesWithF32WithinTheDtypesTolerance) {
  const auto& [c, dtype] = GetParam();
  const loom::ModelConfig config = modern_config(c.num_labels);
  const SmallBatch batch = batch_for(config);
  nlohmann::json file = with(modern_json(config), {c.keys, c.more});
  if (c.training) file.merge_patch(nlohmann::json::parse(kDropouts));
  BlockHarness exact = make_block(c.component, config, loom::DType::f32, batch, c.index, file);
  BlockHarness rounded = make_block(c.component, config, dtype, batch, c.index, file);
  exact.randomize(5);
  rounded.randomize(5);
  const double exact_value = exact.gradients(c.training);
  const double rounded_value = rounded.gradients(c.training);
  const double bound = tolerance(dtype);
  EXPECT_NEAR(rounded_value, exact_value, bound * std::fabs(exact_value) + 1e-3) << "objective";
  const std::vector<float> exact_result = result(exact), rounded_result = result(rounded);
  ASSERT_EQ(exact_result.size(), rounded_result.size());
  EXPECT_LT(relative_distance(rounded_result.data(), exact_result.data(), exact_result.size()), bound)
      << "result";
  double worst = relative_distance(rounded_result.data(), exact_result.data(), exact_result.size());
  for (size_t i = 0; i < exact.parameter_count(); ++i) {
    // The span head's classifier.bias has an exactly-zero gradient (softmax over positions ignores
    // a shift): rounding noise only on both sides, nothing to compare.
    if (l2(exact.gradient(i), exact.count(i)) < 1e-4) continue;
    const double distance = relative_distance(rounded.gradient(i), exact.gradient(i), exact.count(i));
    EXPECT_LT(distance, bound) << exact.spec(i).name;
    worst = std::max(worst, distance);
  }
  if (exact.block().role() != loom::BlockRole::embeddings) {
    const double distance =
        relative_distance(rounded.input_gradient(), exact.input_gradient(), exact.input_count());
    EXPECT_LT(distance, bound) << "input gradient";
    worst = std::max(worst, distance);
  }
  // The embeddings run no GEMM (a gather and a norm in f32); every other block must show the
  // rounding, or the 16-bit path was not taken.
  if (exact.block().role() != loom::BlockRole::embeddings) {
    EXPECT_GT(worst, 0.0) << "16-bit compute left no trace";
  }
  RecordProperty("worst_relative_distance", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Blocks, ModernBertPrecision,
    testing::Combine(
        testing::Values(PrecisionCase{"Embeddings", kEmbeddings, 0, false},
                        PrecisionCase{"Embeddings_dropout", kEmbeddings, 0, true},
                        PrecisionCase{"Layer0", kLayer, 1, false},
                        PrecisionCase{"GlobalLayer_biases", kLayer, 3, false, kBiases},
                        PrecisionCase{"GlobalLayer_biases_dropout", kLayer, 3, true, kBiases},
                        PrecisionCase{"LocalLayer", kLayer, 2, false},
                        PrecisionCase{"LocalLayer_tanh_biases", kLayer, 2, false, kTanh, kBiases},
                        PrecisionCase{"LocalLayer_dropout", kLayer, 2, true},
                        PrecisionCase{"MlmHead", kMlm, kHeadIndex, false},
                        PrecisionCase{"MlmHead_no_decoder_bias", kMlm, kHeadIndex, false, kNoDecoderBias},
                        PrecisionCase{"ClsClassifier", kClassifier, kHeadIndex, false},
                        PrecisionCase{"ClsClassifier_dropout", kClassifier, kHeadIndex, true},
                        PrecisionCase{"MeanClassifier_biases", kClassifier, kHeadIndex, false, kMean,
                                      kBiases},
                        PrecisionCase{"MeanClassifier_dropout", kClassifier, kHeadIndex, true, kMean},
                        PrecisionCase{"MeanRegression", kClassifier, kHeadIndex, false, kMean, "{}", 1},
                        PrecisionCase{"SpanHead", kSpan, kHeadIndex, false},
                        PrecisionCase{"SpanHead_dropout", kSpan, kHeadIndex, true}),
        testing::Values(loom::DType::bf16, loom::DType::f16)),
    [](const testing::TestParamInfo<std::tuple<PrecisionCase, loom::DType>>& info) {
      return std::string(std::get<0>(info.param).name) + "_" + loom::dtype_name(std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------------------------
// What the layer and the pooling read.

// Layer 0 has no attn_norm (its input is the embedding norm's output); every other layer has one.
TEST(ModernBertEncoderLayer, OnlyLayerZeroLacksTheAttentionNorm) {
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  for (int32_t index : {1, 2, 3}) {
    BlockHarness h = make_block(kLayer, config, loom::DType::f32, batch, index, modern_json(config));
    EXPECT_EQ(std::string(h.spec(0).name), index == 1 ? "attn.Wqkv.weight" : "attn_norm.weight") << index;
  }
}

// A local layer's query i attends to keys |i − j| ≤ local_attention / 2 = 2 only: moving position 0's
// input moves the outputs at positions 0..2 and leaves 3..6 bit for bit; a global layer moves all.
TEST(ModernBertEncoderLayer, LocalLayerSeesOnlyItsWindow) {
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  const int64_t T = batch.seq, H = config.hidden_size;
  for (const auto& [index, local] : {std::pair{2, true}, std::pair{3, false}, std::pair{1, false}}) {
    BlockHarness h = make_block(kLayer, config, loom::DType::f32, batch, index, modern_json(config));
    h.randomize(9);
    h.objective(false);
    const std::vector<float> before = h.output();
    // Row 0, position 0, not by a constant (which the attention norm would take out again).
    for (int64_t e = 0; e < H; ++e) h.input()[e] += 0.5f * static_cast<float>(e % 3 - 1);
    h.objective(false);
    const std::vector<float> after = h.output();
    for (int64_t t = 0; t < T; ++t) {
      double moved = 0;
      for (int64_t e = 0; e < H; ++e)
        moved = std::max(moved, std::fabs(static_cast<double>(after[t * H + e]) - before[t * H + e]));
      if (local && t > 2) {
        EXPECT_EQ(moved, 0.0) << "index " << index << ": position " << t << " sees position 0";
      } else {
        EXPECT_GT(moved, 1e-4) << "index " << index << ": position " << t << " does not see position 0";
      }
    }
  }
}

// Embeddings → layer 0 (global) → layer 1 (local) → classifier head, eval, from token ids; returns
// the logits [B, num_labels] and the last layer's output.
struct PipelineResult {
  std::vector<float> logits, hidden;
};
PipelineResult run_classifier(const SmallBatch& batch, const char* pooling) {
  const loom::ModelConfig config = modern_config();
  nlohmann::json file = modern_json(config);
  file["classifier_pooling"] = pooling;
  BlockHarness embeddings = make_block(kEmbeddings, config, loom::DType::f32, batch, 0, file);
  embeddings.randomize(21);
  embeddings.objective(false);
  std::vector<float> hidden = embeddings.output();
  for (int32_t index : {1, 2}) {
    BlockHarness layer = make_block(kLayer, config, loom::DType::f32, batch, index, file);
    layer.randomize(21 + static_cast<uint32_t>(index));
    std::copy(hidden.begin(), hidden.end(), layer.input());
    layer.objective(false);
    hidden = layer.output();
  }
  BlockHarness head = make_block(kClassifier, config, loom::DType::f32, batch, 3, file);
  head.randomize(25);
  std::copy(hidden.begin(), hidden.end(), head.input());
  head.objective(false);
  return {result(head), hidden};
}

double largest_difference(const std::vector<float>& a, const std::vector<float>& b, size_t begin,
                          size_t end) {
  double worst = 0;
  for (size_t e = begin; e < end; ++e) worst = std::max(worst, std::fabs(static_cast<double>(a[e]) - b[e]));
  return worst;
}

int32_t another_token(int32_t id) {
  return id == 5 ? 6 : 5;
}

// Row 1 of the small batch is 5 real tokens and 2 padding positions (6 and 7th, mask 0).
TEST(ModernBertClassifierPooling, MeanPoolingIgnoresTheIdsAtPaddingPositions) {
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  const int64_t T = batch.seq, H = config.hidden_size, L = config.num_labels;
  ASSERT_EQ(batch.mask[1 * T + 5], 0);
  ASSERT_EQ(batch.mask[1 * T + 6], 0);
  const PipelineResult base = run_classifier(batch, "mean");

  SmallBatch padded = batch;
  padded.ids[1 * T + 5] = 17;
  padded.ids[1 * T + 6] = 33;
  const PipelineResult moved = run_classifier(padded, "mean");
  // The change reaches the hidden state at the padding positions (and nowhere else) ...
  EXPECT_GT(largest_difference(moved.hidden, base.hidden, (1 * T + 5) * H, 2 * T * H), 1e-3);
  EXPECT_EQ(largest_difference(moved.hidden, base.hidden, 0, (1 * T + 5) * H), 0.0);
  // ... and not the logits.
  ASSERT_EQ(moved.logits.size(), static_cast<size_t>(2 * L));
  for (size_t k = 0; k < moved.logits.size(); ++k)
    EXPECT_EQ(moved.logits[k], base.logits[k]) << "logit " << k;

  // A real token of row 1 does move row 1's logits (the comparison above can fail).
  SmallBatch real = batch;
  real.ids[1 * T + 4] = another_token(real.ids[1 * T + 4]);
  const PipelineResult changed = run_classifier(real, "mean");
  EXPECT_GT(largest_difference(changed.logits, base.logits, L, 2 * L), 1e-4);
  EXPECT_EQ(largest_difference(changed.logits, base.logits, 0, L), 0.0);
}

TEST(ModernBertClassifierPooling, ClsPoolingReadsPositionZero) {
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  const int64_t T = batch.seq, L = config.num_labels;
  const PipelineResult base = run_classifier(batch, "cls");
  for (int64_t row : {0, 1}) {
    SmallBatch first = batch;
    first.ids[row * T] = another_token(first.ids[row * T]);
    const PipelineResult moved = run_classifier(first, "cls");
    EXPECT_GT(largest_difference(moved.logits, base.logits, row * L, (row + 1) * L), 1e-4) << "row " << row;
    EXPECT_EQ(largest_difference(moved.logits, base.logits, (1 - row) * L, (2 - row) * L), 0.0)
        << "row " << row;
  }
  // Padding does not reach position 0 either (its key is masked in every layer).
  SmallBatch padded = batch;
  padded.ids[1 * T + 6] = 33;
  const PipelineResult unmoved = run_classifier(padded, "cls");
  EXPECT_EQ(largest_difference(unmoved.logits, base.logits, 0, 2 * L), 0.0);
}

// The cls head's input gradient lives at position 0 only; the mean head's at every real position
// of each row and at no padding position.
TEST(ModernBertClassifierPooling, InputGradientFollowsThePooling) {
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  const int64_t T = batch.seq, H = config.hidden_size;
  for (const char* pooling : {"cls", "mean"}) {
    nlohmann::json file = modern_json(config);
    file["classifier_pooling"] = pooling;
    BlockHarness h = make_block(kClassifier, config, loom::DType::f32, batch, kHeadIndex, file);
    h.randomize(6);
    h.gradients(false);
    const bool mean = std::string(pooling) == "mean";
    for (int64_t r = 0; r < batch.batch; ++r)
      for (int64_t t = 0; t < T; ++t) {
        const float* g = h.input_gradient() + (r * T + t) * H;
        double norm = 0;
        for (int64_t e = 0; e < H; ++e) norm += std::fabs(g[e]);
        const bool expected = mean ? batch.mask[static_cast<size_t>(r * T + t)] != 0 : t == 0;
        if (expected) {
          EXPECT_GT(norm, 1e-6) << pooling << " row " << r << " position " << t;
        } else {
          EXPECT_EQ(norm, 0.0) << pooling << " row " << r << " position " << t;
        }
      }
  }
}

// ---------------------------------------------------------------------------------------------
// Config refusals: every block reads the family's keys, so each refuses alike.

struct Refusal {
  const char* name;
  const char* patch;  // config.json keys over modern_json
  const char* key;    // what the message must name
  int32_t heads = 3;  // num_attention_heads of the shared config
};

void PrintTo(const Refusal& r, std::ostream* os) {
  *os << r.name;
}

class ModernBertConfigRefusal : public testing::TestWithParam<Refusal> {};

TEST_P(ModernBertConfigRefusal, EveryBlockRefusesNamingTheKey) {
  const Refusal& r = GetParam();
  loom::ModelConfig config = modern_config();
  config.num_attention_heads = r.heads;
  const SmallBatch batch = batch_for(config);
  const nlohmann::json file = with(modern_json(config), {r.patch});
  for (const char* component : {kEmbeddings, kLayer, kMlm, kClassifier, kSpan}) {
    try {
      BlockHarness h = make_block(component, config, loom::DType::f32, batch, 2, file);
      ADD_FAILURE() << component << " accepted " << file.dump();
    } catch (const loom::ConfigError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(r.key), std::string::npos) << component << ": " << message;
      EXPECT_NE(message.find(kSource), std::string::npos) << component << ": " << message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Keys, ModernBertConfigRefusal,
    testing::Values(
        Refusal{"BertModelType", R"({"model_type": "bert"})", "model_type"},
        // hidden 24 over 8 heads: head size 3, which rotary embeddings cannot pair
        Refusal{"OddHeadSize", R"({"num_attention_heads": 8})", "num_attention_heads", 8},
        Refusal{"MaxPooling", R"({"classifier_pooling": "max"})", "classifier_pooling"},
        Refusal{"LinearRope",
                R"({"rope_parameters": {"full_attention": {"rope_type": "linear", "rope_theta": 160000.0,
                                                                        "factor": 2.0}}})",
                "rope_parameters.full_attention.rope_type"},
        Refusal{"LinearLocalRope",
                R"({"rope_parameters": {"sliding_attention": {"rope_type": "linear", "rope_theta": 10000.0,
                                                                           "factor": 2.0}}})",
                "rope_parameters.sliding_attention.rope_type"},
        Refusal{"ShortLayerTypes", R"({"layer_types": ["full_attention", "sliding_attention"]})",
                "layer_types"},
        Refusal{"LongLayerTypes",
                R"({"layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                                                "full_attention"]})",
                "layer_types"}),
    [](const testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

// The accepted spellings of the same keys (the refusals above are of the value, not the key).
TEST(ModernBertConfig, AcceptsTheDefaultRopeAndAFullLayerTypesList) {
  const loom::ModelConfig config = modern_config();
  const SmallBatch batch = batch_for(config);
  const nlohmann::json file =
      with(modern_json(config),
           {R"({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
           "layer_types": ["full_attention", "sliding_attention", "full_attention"],
           "classifier_pooling": "mean"})"});
  for (const char* component : {kEmbeddings, kLayer, kMlm, kClassifier, kSpan})
    EXPECT_NO_THROW(make_block(component, config, loom::DType::f32, batch, 2, file)) << component;
}

}  // namespace
}  // namespace loom_modernbert_test
