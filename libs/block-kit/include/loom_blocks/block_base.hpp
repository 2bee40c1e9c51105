// BlockBase: what every model block of Loom's first-party families shares — setup, parameter
// bookkeeping, compute-dtype casts, dropout keys and the linear layer. A family derives its own base
// (loom_bert::BertBlock, loom_modernbert::ModernBlock) that checks its config; each concrete block
// is one file of its plugin.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/backward_input.hpp"
#include "loom/sdk/block.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/ops/bias_grad_copy.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/ops/linear_bias.hpp"
#include "loom_blocks/parameter_list.hpp"

namespace loom_blocks {

/// splitmix64: mixes block index and dropout site into a Philox key.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Counter offsets of a block's dropout sites are `site << kDropoutSiteShift` (2^40 elements each).
inline constexpr int kDropoutSiteShift = 40;

class BlockBase : public loom::Block, public loom::BackwardInput {
 public:
  /// BackwardInput: a block reads its input in backward unless it says otherwise (each offers it).
  bool backward_reads_input() const override { return true; }
  void setup(const loom::BlockSetup& setup) override {
    if (setup.config == nullptr || setup.backend == nullptr)
      throw loom::Error(name_ + ": setup without config or backend");
    if (setup.compute_dtype != loom::DType::f32 && setup.compute_dtype != loom::DType::bf16 &&
        setup.compute_dtype != loom::DType::f16)
      throw loom::UnsupportedError(name_ + ": compute dtype " + loom::dtype_name(setup.compute_dtype) +
                                   " is not supported (f32, bf16 or f16)");
    config_ = *setup.config;
    backend_ = setup.backend;
    fused_attention_ops_ = loom::find_backend_interface<loom::FusedAttention>(setup);
    linear_bias_ = loom::find_backend_interface<loom::LinearBias>(setup);
    bias_grad_copy_ = loom::find_backend_interface<loom::BiasGradCopy>(setup);
    compute_ = setup.compute_dtype;
    index_ = setup.index;
    config_json_ = setup.config_json;  // nullptr from a host before SDK 0.4
    config_source_ = setup.config_source != nullptr ? setup.config_source : "config.json";
    check_config();
    declare_parameters();
  }
  size_t parameter_count() const override { return params_.size(); }
  loom::ParameterSpec parameter(size_t index) const override { return params_.spec(index); }
  void bind_parameters(const loom::ParameterView* views, size_t count) override {
    params_.bind(views, count, name_.c_str());
  }
  size_t output_count() const override { return 0; }
  loom::BlockOutput output(size_t) const override { throw loom::Error(name_ + ": has no named outputs"); }

 protected:
  explicit BlockBase(std::string name) : name_(std::move(name)) {}

  /// Declares every parameter into params_ (config_ and the config file are set).
  virtual void declare_parameters() = 0;
  /// Checks the config values the block relies on; throws ConfigError naming the key.
  virtual void check_config() = 0;

  /// `value` of config key `key` must be positive.
  void check_positive(int64_t value, const char* key) const {
    if (value <= 0)
      throw loom::ConfigError(name_ + ": model config " + key + " = " + std::to_string(value) + " must be positive");
  }
  /// The sizes every family's blocks rely on: positive, and heads that divide the hidden size.
  void check_shared_sizes() const {
    check_positive(config_.hidden_size, "hidden_size");
    check_positive(config_.num_attention_heads, "num_attention_heads");
    check_positive(config_.intermediate_size, "intermediate_size");
    check_positive(config_.vocab_size, "vocab_size");
    if (config_.hidden_size % config_.num_attention_heads != 0)
      throw loom::ConfigError(
          name_ + ": model config hidden_size = " + std::to_string(config_.hidden_size) +
          " is not a multiple of num_attention_heads = " + std::to_string(config_.num_attention_heads));
  }

  /// 16-bit compute (bf16 or f16): GEMM operands are copies in compute_, not the f32 tensors.
  bool reduced() const { return compute_ != loom::DType::f32; }
  loom::Backend& be() const { return *backend_; }

  /// `x` (f32) as a GEMM operand: itself in f32 compute, else cast into `buffer` (compute dtype).
  loom::Tensor to_compute(const loom::Tensor& x, const loom::Tensor& buffer) const {
    if (!reduced()) return x;
    backend_->cast(x, buffer);
    return buffer;
  }

  /// dbias += the column sums of dy (f32, contiguous), and dy as the operand of the layer's backward
  /// GEMMs: in 16-bit compute its copy in `buffer` — written by the pass that sums it when the
  /// backend offers BiasGradCopy, else cast — and in f32 compute dy itself.
  loom::Tensor bias_grad_operand(const loom::Tensor& dy, const loom::Tensor& dbias, const loom::Tensor& buffer) const {
    if (reduced() && bias_grad_copy_ != nullptr) {
      bias_grad_copy_->bias_grad_copy(dy, dbias, buffer);
      return buffer;
    }
    backend_->bias_grad(dy, dbias);
    return to_compute(dy, buffer);
  }

  /// y = dropout(x) at `site` (identity when not training or p = 0; y may alias x).
  /// (`first`: the element number of x's first element within the site, where a site's tensor is
  /// handed over in parts — one sequence of a packed batch at a time.)
  void dropout_forward(const loom::StepArgs& step, const loom::Tensor& x, const loom::Tensor& y, float p,
                       uint64_t site, uint64_t first = 0) const {
    if (step.training == 0 || p == 0.0f) {
      if (x.data != y.data) backend_->copy(x, y);
      return;
    }
    backend_->dropout_forward(x, y, p, dropout_key(step), (site << kDropoutSiteShift) + first);
  }
  /// dx = dropout'(dy) with the forward's mask (dx may alias dy).
  void dropout_backward(const loom::StepArgs& step, const loom::Tensor& dy, const loom::Tensor& dx, float p,
                        uint64_t site, uint64_t first = 0) const {
    if (step.training == 0 || p == 0.0f) {
      if (dy.data != dx.data) backend_->copy(dy, dx);
      return;
    }
    backend_->dropout_backward(dy, dx, p, dropout_key(step), (site << kDropoutSiteShift) + first);
  }
  bool dropout_active(const loom::StepArgs& step, float p) const { return step.training != 0 && p > 0.0f; }

  /// y[N, out] = x[N, in]·Wᵀ (+ bias). x and W in the compute dtype; y f32 when there is a bias.
  void linear_forward(const loom::Tensor& x, size_t weight, const loom::Tensor& bias,
                      const loom::Tensor& y) const {
    if (bias.defined()) {
      linear_bias_forward(x, weight, bias, y, loom::Tensor{});
      return;
    }
    backend_->gemm(x, false, params_.view(weight).compute, true, y, 1.0f, 0.0f);
  }
  /// y[N, out] (f32, or 16-bit with an f32 `scratch` of its shape) = x·Wᵀ + bias, rounded once:
  /// one op when the backend offers LinearBias, else gemm into f32, bias_add and cast.
  void linear_bias_forward(const loom::Tensor& x, size_t weight, const loom::Tensor& bias, const loom::Tensor& y,
                           const loom::Tensor& scratch) const {
    linear_bias_forward(x, params_.view(weight).compute, bias, y, scratch);
  }
  void linear_bias_forward(const loom::Tensor& x, const loom::Tensor& w, const loom::Tensor& bias,
                           const loom::Tensor& y, const loom::Tensor& scratch) const {
    if (linear_bias_ != nullptr) {
      linear_bias_->linear_bias_forward(x, w, bias, y, scratch);
      return;
    }
    const loom::Tensor& sum = y.dtype == loom::DType::f32 ? y : scratch;
    backend_->gemm(x, false, w, true, sum, 1.0f, 0.0f);
    backend_->bias_add(sum, bias);
    if (sum.data != y.data) backend_->cast(sum, y);
  }
  /// Gradients of linear_forward: dbias += Σ dy (f32 dy), dW += dy_cᵀ·x, and dx = dy_c·W
  /// (dx_beta 0: overwrite, 1: accumulate) when dx is given. dy_c is dy in the compute dtype.
  void linear_backward(const loom::Tensor& dy, const loom::Tensor& dy_c, const loom::Tensor& x, size_t weight,
                       const loom::Tensor& dbias, const loom::Tensor& dx, float dx_beta) const {
    if (dbias.defined()) backend_->bias_grad(dy, dbias);
    backend_->gemm(dy_c, true, x, false, params_.view(weight).grad, 1.0f, 1.0f);
    if (dx.defined()) backend_->gemm(dy_c, false, params_.view(weight).compute, false, dx, 1.0f, dx_beta);
  }

  /// A [B·T, H] activation (unit column stride, any row stride r: a block of columns of a wider
  /// one) seen per head: [B, nh, T, d] with strides T·r, d, r, 1 (no copy).
  loom::Tensor heads(const loom::Tensor& x, int64_t B, int64_t T) const {
    const int64_t nh = config_.num_attention_heads, d = config_.hidden_size / nh, r = x.strides[0];
    loom::Tensor h = x;
    h.ndim = 4;
    const int64_t shape[4] = {B, nh, T, d}, strides[4] = {T * r, d, r, 1};
    for (int k = 0; k < 4; ++k) h.shape[k] = shape[k], h.strides[k] = strides[k];
    return h;
  }

  const loom::Tensor& master(size_t i) const { return params_.view(i).master; }
  const loom::Tensor& grad(size_t i) const { return params_.view(i).grad; }
  const loom::Tensor& compute(size_t i) const { return params_.view(i).compute; }

  std::string name_;
  loom::ModelConfig config_{};
  loom::Backend* backend_ = nullptr;
  loom::FusedAttention* fused_attention_ops_ = nullptr;  ///< the backend's fused attention, when offered
  loom::LinearBias* linear_bias_ = nullptr;              ///< the backend's linear + bias op, when offered
  loom::BiasGradCopy* bias_grad_copy_ = nullptr;         ///< bias_grad with the 16-bit copy, when offered
  loom::DType compute_ = loom::DType::f32;
  int32_t index_ = 0;
  const char* config_json_ = nullptr;  ///< the whole config.json (BlockSetup::config_json), or nullptr
  std::string config_source_;          ///< its file name, for messages
  ParameterList params_;

  /// The Philox key of this block's dropout in this micro-step; sites are offsets within it.
  uint64_t dropout_key(const loom::StepArgs& step) const {
    return mix64(step.dropout_seed ^ mix64(static_cast<uint64_t>(index_) + 1));
  }
};

}  // namespace loom_blocks
