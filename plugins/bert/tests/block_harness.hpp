// BlockHarness: one model block (BERT's; ModernBERT's tests use it too) driven directly through the
// Block interface on backend/cpu, with its parameters in separate buffers, for finite-difference
// and precision tests.
//
// The objective of a layer or embeddings block is L = Σ output ⊙ R for a fixed random R (so
// dL/doutput = R); of a head it is its loss. Sums are taken in double on the host.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"
#include "model/batch_staging.hpp"
#include "plugin_loading/component.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace loom_bert_test {

/// The plugin registry over the build's plugin directory (backend/cpu and the model blocks).
const loom::host::PluginRegistry& registry();
/// backend/cpu with `threads` threads and its `fused_attention` option (created once per pair).
loom::Backend& cpu_backend(int threads = 1, bool fused_attention = false);
/// The same backend as the registry's component handle (with its named interfaces).
const loom::host::Component<loom::Backend>& cpu_backend_component(int threads = 1,
                                                                  bool fused_attention = false);
/// A handle for a backend a test owns and keeps alive (it offers no named interfaces).
loom::host::Component<loom::Backend> borrowed_backend(loom::Backend& backend);

/// A small config: hidden 24, 3 heads, intermediate 37, vocab 53 (padded to 56), 16 positions.
loom::ModelConfig small_config(loom::GeluKind gelu = loom::GeluKind::erf);

/// A batch of 2×7 with padding in row 1, token types, 4 MLM labels, NSP/class labels, spans, and
/// regression targets (staged instead of the class labels when `regression`).
struct SmallBatch {
  int64_t batch = 2, seq = 7;
  std::vector<int32_t> ids, types, mask, mlm_labels, nsp, labels, start, end;
  std::vector<float> targets;
  bool regression = false;
  loom::host::HostBatch view() const;
};
SmallBatch small_batch(const loom::ModelConfig& config);

/// Where the block sits and which config file it reads: BlockSetup's `index` (its position in the
/// model's block list, which keys its dropout streams and, for a ModernBERT layer, gives its layer
/// number index − 1) and `config_json` / `config_source` (SDK 0.4). The default is what BERT's tests
/// use: index 0 and no config file (config_json nullptr, as from a host before SDK 0.4).
struct BlockPlacement {
  int32_t index = 0;
  std::string config_json;    ///< the whole config.json text; empty: none (nullptr)
  std::string config_source;  ///< its file name for messages; empty: none (nullptr)
};

class BlockHarness {
 public:
  /// `fused_attention`: the backend's fused attention op serves the encoder layer.
  /// `named_interfaces` false: the block sees none of the backend's named interfaces (no fused
  /// attention, no ResidualLayerNorm), so it runs the separate ops of loom::Backend only.
  /// `flat_parameters`: the parameters live in one buffer per kind (master, gradient, working
  /// copy) at 16-float-aligned offsets in declaration order, as the host lays them out, instead of
  /// a buffer each. `interfaces`, when given, answers the block's questions for named interfaces
  /// instead of the backend's component (a test that offers an interface backend/cpu does not).
  /// `compute` f32, bf16 or f16: the 16-bit dtypes get a working copy cast from the master values.
  /// `placement`: the block's index and config file (BlockPlacement).
  BlockHarness(const std::string& component, const loom::ModelConfig& config, loom::DType compute,
               const SmallBatch& batch, bool fused_attention = false, bool named_interfaces = true,
               bool flat_parameters = false, loom_query_interface_fn interfaces = nullptr,
               const BlockPlacement& placement = {});

  loom::Block& block() const { return *block_.get(); }
  const loom::host::Component<loom::Block>& component() const { return block_; }
  size_t parameter_count() const { return specs_.size(); }
  const loom::ParameterSpec& spec(size_t i) const { return specs_[i]; }
  /// Master values of parameter i (host-addressable: backend/cpu).
  float* values(size_t i) const { return static_cast<float*>(views_[i].master.data); }
  const float* gradient(size_t i) const { return static_cast<const float*>(views_[i].grad.data); }
  /// With flat parameters: the gradient buffer's floats between parameter i's gradient and the
  /// next one's (its alignment gap), which gradients() fills with kGapSentinel before backward.
  std::vector<float> gradient_gap(size_t i) const;
  static constexpr float kGapSentinel = -1234.5f;
  size_t count(size_t i) const;
  /// The block's input [B, T, H] (layers and heads), host-addressable.
  float* input() const { return static_cast<float*>(input_.data()); }
  const float* input_gradient() const { return static_cast<const float*>(d_input_.data()); }
  int64_t input_count() const { return batch_view_->batch * batch_view_->seq * config_.hidden_size; }

  /// Random parameters (weights ~ N(0, scale²), γ ~ 1 + N(0, 0.1²), biases ~ N(0, 0.1²)) and input.
  void randomize(uint32_t seed, float scale = 0.3f);
  /// Forward; returns the objective.
  double objective(bool training);
  /// Zeroes gradients, runs forward and backward; returns the objective.
  double gradients(bool training);
  /// The block output after forward (layers/embeddings) copied to the host.
  std::vector<float> output() const;

  /// HiddenCopy, as the host uses it: tells the block which copies it gets (then sizes its saved
  /// bytes again) and hands them over before each forward — the input's as cast from input(),
  /// unless replace_input_copy set it, and a buffer for the output's.
  void use_hidden_copies(bool input, bool output);
  /// Fills the input's copy with `value` instead (a test that the block reads the copy it gets).
  void replace_input_copy(float value);
  /// The output's copy after forward, widened to f32.
  std::vector<float> output_copy() const;
  size_t saved_bytes() const { return saved_.bytes(); }

 private:
  void sync_compute();

  loom::ModelConfig config_;
  BlockPlacement placement_;  // its strings outlive the block, as BlockSetup asks
  loom::DType compute_;
  loom::Backend& backend_;
  loom::host::Component<loom::Block> block_;
  std::vector<loom::ParameterSpec> specs_;
  std::vector<loom::Buffer> master_, grad_, working_;
  std::vector<loom::ParameterView> views_;       // parameter i's views into those buffers
  std::vector<std::pair<size_t, size_t>> gaps_;  // flat: [begin, end) floats after parameter i
  std::unique_ptr<loom::host::BatchStaging> staging_;
  const loom::BatchView* batch_view_ = nullptr;
  loom::Buffer input_, d_input_, output_, d_output_, saved_, scratch_;
  loom::Buffer input_copy_, output_copy_;  // HiddenCopy's, when used
  bool replaced_input_copy_ = false;
  loom::Tensor hidden_view(const loom::Buffer& buffer, loom::DType dtype) const;
  loom::ActivationShape shape_{};
  std::vector<float> weights_;  // R
};

/// Worst |a − b| over n elements, relative to the largest |b|.
double max_relative_difference(const float* a, const float* b, size_t n);

/// Expects `a` and `b` (the same block, configuration and data, after gradients()) to agree within
/// `bound` (max_relative_difference) in output, every parameter gradient and the input gradient.
/// The key bias's gradient is skipped: it is zero in exact arithmetic (softmax ignores a shift), so
/// both sides hold rounding noise only.
void expect_same_results(const BlockHarness& a, const BlockHarness& b, double bound);

}  // namespace loom_bert_test
