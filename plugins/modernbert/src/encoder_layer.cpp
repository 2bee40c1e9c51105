// block/modernbert.encoder-layer: one pre-LN ModernBERT layer, as Hugging Face's
// ModernBertEncoderLayer computes it.
//
//   xn   = attn_norm(h)               (layer 0: xn = h, its attn_norm is the identity)
//   qkv  = xn·Wqkvᵀ (+ b)             [N, 3H], q and k rotated in place (rotary, the layer's theta)
//   ctx  = attention(q, k, v)         full on global layers; |i − j| ≤ local_attention / 2 on the others
//   h1   = h + dropout(ctx·Woᵀ (+ b))
//   out  = h1 + Wo_mlp(dropout(gelu(a) ⊙ g)) (+ b),  [a, g] = mlp_norm(h1)·Wiᵀ (+ b)
// The layer's number is its block position less one (the embeddings come first); the config's
// attention pattern says whether it is global. Needs the backend's RotaryEmbedding, GatedGelu and
// WindowedAttention op families; runs packed batches (loom/sdk/packed_tokens.hpp) where the backend
// offers PackedAttention, which rotates each token at its position and keeps attention (and the
// window, counted in the same columns) within its sequence.
#include <algorithm>
#include <cmath>
#include <optional>

#include "components.hpp"
#include "loom/sdk/ops/geglu.hpp"
#include "loom/sdk/ops/packed_attention.hpp"
#include "loom/sdk/ops/rotary_embedding.hpp"
#include "loom/sdk/ops/windowed_attention.hpp"
#include "loom/sdk/packed_tokens.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/packed_sequences.hpp"
#include "modern_block.hpp"

namespace loom_modernbert {
namespace {

using loom::DType;
using loom::Tensor;

class EncoderLayer final : public ModernBlock, public loom::PackedTokens {
 public:
  explicit EncoderLayer(loom::ComponentContext&) : ModernBlock("block/modernbert.encoder-layer") {}

  loom::BlockRole role() const override { return loom::BlockRole::layer; }
  const char* scope() const override { return "model.layers.#"; }
  bool accepts_packed_tokens() const override { return packed_ != nullptr; }

  void setup(const loom::BlockSetup& setup) override {
    ModernBlock::setup(setup);
    rotary_ = loom::find_backend_interface<loom::RotaryEmbedding>(setup);
    gated_gelu_ = loom::find_backend_interface<loom::GatedGelu>(setup);
    attention_ = loom::find_backend_interface<loom::WindowedAttention>(setup);
    packed_ = loom::find_backend_interface<loom::PackedAttention>(setup);
    const auto require = [&](const void* offered, const char* family) {
      if (offered == nullptr)
        throw loom::UnsupportedError(name_ + ": the backend does not offer the op family " + family +
                                     " (backend/cpu and backend/cuda do; update the backend plugin)");
    };
    require(rotary_, loom::RotaryEmbedding::kInterfaceName);
    require(gated_gelu_, loom::GatedGelu::kInterfaceName);
    require(attention_, loom::WindowedAttention::kInterfaceName);
  }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch, shape.seq);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    carve_scratch(scratch, shape.batch, shape.seq);
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const Tensor& input, const Tensor& output) override {
    const int64_t B = step.batch->batch, T = step.batch->seq, N = B * T, H = config_.hidden_size;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(region, B, T);
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, B, T);
    const Tensor h = input.reshape({N, H});
    input_view_ = h;  // the host keeps the input unchanged until this block's backward

    // Attention branch.
    Tensor xn_c;
    if (first_layer()) {
      xn_c = to_compute(h, s.xn_c);
    } else {
      norm_forward(attn_norm_, h, s.xn, s.mean1, s.rstd1, w.spare);
      xn_c = to_compute(s.xn, s.xn_c);
    }
    linear(xn_c, qkv_weight_, qkv_bias_, s.qkv, w.tmp_qkv);
    rotate(*step.batch, heads(s.qkv, 0, B, T), false);
    rotate(*step.batch, heads(s.qkv, 1, B, T), false);
    if (loom_blocks::is_packed(*step.batch)) {
      packed_->packed_attention_forward(heads(s.qkv, 0, B, T), heads(s.qkv, 1, B, T), heads(s.qkv, 2, B, T),
                                        step.batch->sequence_starts, step.batch->sequence_starts_host,
                                        step.batch->max_sequence, scale(), window(), attention_dropout(step),
                                        dropout_key(step), 0, heads(s.ctx, 0, B, T), s.lse);
    } else {
      attention_->windowed_attention_forward(heads(s.qkv, 0, B, T), heads(s.qkv, 1, B, T), heads(s.qkv, 2, B, T),
                                             step.batch->attention_bias, scale(), window(),
                                             attention_dropout(step), dropout_key(step), 0,
                                             heads(s.ctx, 0, B, T), s.lse);
    }
    linear(s.ctx, out_weight_, out_bias_, w.branch, Tensor{});
    dropout_forward(step, w.branch, w.branch, modern_.attention_dropout, 1);
    be().add(h, w.branch, s.h1);

    // GeGLU branch.
    norm_forward(mlp_norm_, s.h1, s.xn2, s.mean2, s.rstd2, w.spare);
    linear(to_compute(s.xn2, s.xn2_c), wi_weight_, wi_bias_, s.wi, w.tmp_wi);
    gated_gelu_->gated_gelu_forward(s.wi, w.act, modern_.hidden_activation);
    dropout_forward(step, w.act, w.act, modern_.mlp_dropout, 2);
    linear(to_compute(w.act, s.act_c), wo_weight_, wo_bias_, w.branch, Tensor{});
    be().add(s.h1, w.branch, output.reshape({N, H}));
  }

  void backward(const loom::StepArgs& step, const Tensor& d_output, const Tensor& d_input) override {
    const int64_t B = step.batch->batch, T = step.batch->seq, N = B * T, H = config_.hidden_size;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(region, B, T);
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, B, T);
    const Tensor dy = d_output.reshape({N, H}), dx = d_input.reshape({N, H});

    // GeGLU branch: d_h1 = dy + mlp_norm'(Wi'(geglu'(Wo'(dy)))).
    const Tensor act_c = reduced() ? s.act_c : w.act;
    if (!reduced()) recompute_act(step, s, w);
    linear_backward(dy, to_compute(dy, w.d_rows_c), act_c, wo_weight_, grad_of(wo_bias_), w.d_act, 0.0f);
    dropout_backward(step, w.d_act, w.d_act, modern_.mlp_dropout, 2);
    gated_gelu_->gated_gelu_backward(w.d_act, s.wi, w.d_wi, modern_.hidden_activation);
    const Tensor xn2_c = reduced() ? s.xn2_c : s.xn2;
    linear_backward(w.d_wi, to_compute(w.d_wi, w.d_wi_c), xn2_c, wi_weight_, grad_of(wi_bias_), w.d_rows, 0.0f);
    be().copy(dy, w.d_h1);
    norm_backward(mlp_norm_, w.d_rows, s.h1, s.mean2, s.rstd2, w.d_h1, true, w.spare);

    // Attention branch: d_input = d_h1 + attn_norm'(Wqkv'(rotary'(attention'(Wo'(dropout'(d_h1)))))).
    const bool dropped = dropout_active(step, modern_.attention_dropout);
    const Tensor d_branch = dropped ? w.d_rows : w.d_h1;
    if (dropped) dropout_backward(step, w.d_h1, w.d_rows, modern_.attention_dropout, 1);
    linear_backward(d_branch, to_compute(d_branch, w.d_rows_c), s.ctx, out_weight_, grad_of(out_bias_), w.d_ctx,
                    0.0f);
    const Tensor& d_qkv = w.d_qkv;
    if (loom_blocks::is_packed(*step.batch)) {
      packed_->packed_attention_backward(
          heads(w.d_ctx, 0, B, T), heads(s.qkv, 0, B, T), heads(s.qkv, 1, B, T), heads(s.qkv, 2, B, T),
          heads(s.ctx, 0, B, T), s.lse, step.batch->sequence_starts, step.batch->sequence_starts_host,
          step.batch->max_sequence, scale(), window(), attention_dropout(step), dropout_key(step), 0,
          heads(d_qkv, 0, B, T), heads(d_qkv, 1, B, T), heads(d_qkv, 2, B, T), w.delta);
    } else {
      attention_->windowed_attention_backward(
          heads(w.d_ctx, 0, B, T), heads(s.qkv, 0, B, T), heads(s.qkv, 1, B, T), heads(s.qkv, 2, B, T),
          heads(s.ctx, 0, B, T), s.lse, step.batch->attention_bias, scale(), window(), attention_dropout(step),
          dropout_key(step), 0, heads(d_qkv, 0, B, T), heads(d_qkv, 1, B, T), heads(d_qkv, 2, B, T), w.delta);
    }
    rotate(*step.batch, heads(d_qkv, 0, B, T), true);
    rotate(*step.batch, heads(d_qkv, 1, B, T), true);
    const Tensor xn_c = reduced() ? s.xn_c : first_layer() ? input_view_ : s.xn;
    linear_backward(d_qkv, to_compute(d_qkv, w.d_qkv_c), xn_c, qkv_weight_, grad_of(qkv_bias_), w.d_rows, 0.0f);
    if (first_layer()) {
      be().add(w.d_h1, w.d_rows, dx);
    } else {
      be().copy(w.d_h1, dx);
      norm_backward(attn_norm_, w.d_rows, input_view_, s.mean1, s.rstd1, dx, true, w.spare);
    }
  }

 private:
  struct Saved {
    Tensor mean1, rstd1, xn, xn_c, qkv, ctx, lse, h1, mean2, rstd2, xn2, xn2_c, wi, act_c;
  };
  struct Scratch {
    Tensor spare, tmp_qkv, tmp_wi, branch, act, d_rows, d_rows_c, d_h1, d_act, d_wi, d_wi_c, d_qkv, d_qkv_c, d_ctx,
        delta;
  };

  int64_t head_dim() const { return config_.hidden_size / config_.num_attention_heads; }
  bool first_layer() const { return index_ == 1; }
  int64_t layer() const { return index_ - 1; }
  bool global() const {
    const auto& kinds = modern_.global_layers;
    return layer() < 0 || layer() >= static_cast<int64_t>(kinds.size()) || kinds[static_cast<size_t>(layer())];
  }
  double theta() const { return global() ? modern_.global_rope_theta : modern_.local_rope_theta; }
  int64_t window() const { return global() ? -1 : modern_.local_attention / 2; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim())); }
  float attention_dropout(const loom::StepArgs& step) const {
    return dropout_active(step, modern_.attention_dropout) ? modern_.attention_dropout : 0.0f;
  }
  Tensor grad_of(const std::optional<size_t>& bias) const { return bias ? grad(*bias) : Tensor{}; }

  /// Rotates head views in place by the layer's theta: row t at position t, or in a packed batch at
  /// its token's position.
  void rotate(const loom::BatchView& batch, const Tensor& x, bool inverse) const {
    if (loom_blocks::is_packed(batch))
      packed_->packed_rotary_apply(x, x, batch.token_positions, theta(), inverse);
    else
      rotary_->rotary_apply(x, x, theta(), inverse);
  }

  /// Part `part` (0 q, 1 k, 2 v; or 0 for a [N, H] activation) of a [B·T, parts·H] activation per head.
  Tensor heads(const Tensor& activation, int part, int64_t B, int64_t T) const {
    return BlockBase::heads(activation.narrow(1, part * config_.hidden_size, config_.hidden_size), B, T);
  }

  /// y = x·Wᵀ (+ b): y in the compute dtype or f32; a 16-bit y with a bias uses `tmp` (f32, y's shape).
  void linear(const Tensor& x_c, size_t weight, const std::optional<size_t>& bias, const Tensor& y,
              const Tensor& tmp) const {
    if (!bias) {
      be().gemm(x_c, false, compute(weight), true, y, 1.0f, 0.0f);
      return;
    }
    linear_bias_forward(x_c, weight, master(*bias), y, y.dtype == DType::f32 ? Tensor{} : tmp);
  }

  /// In f32 compute the GeGLU output is not saved (the reduced path saves its compute copy, which
  /// the Wo GEMM reads anyway): backward recomputes it, with the forward's dropout mask.
  void recompute_act(const loom::StepArgs& step, const Saved& s, const Scratch& w) const {
    gated_gelu_->gated_gelu_forward(s.wi, w.act, modern_.hidden_activation);
    dropout_forward(step, w.act, w.act, modern_.mlp_dropout, 2);
  }

  Saved carve_saved(RegionCarver& r, int64_t B, int64_t T) const {
    const int64_t N = B * T, H = config_.hidden_size, I = config_.intermediate_size;
    const DType c = compute_;
    Saved s;
    if (!first_layer()) {
      s.mean1 = r.take(DType::f32, {N});
      s.rstd1 = r.take(DType::f32, {N});
      s.xn = r.take(DType::f32, {N, H});
    }
    s.xn_c = r.take_compute_copy(c, {N, H});
    s.qkv = r.take(c, {N, 3 * H});
    s.ctx = r.take(c, {N, H});
    s.lse = r.take(DType::f32, {B, config_.num_attention_heads, T});
    s.h1 = r.take(DType::f32, {N, H});
    s.mean2 = r.take(DType::f32, {N});
    s.rstd2 = r.take(DType::f32, {N});
    s.xn2 = r.take(DType::f32, {N, H});
    s.xn2_c = r.take_compute_copy(c, {N, H});
    s.wi = r.take(c, {N, 2 * I});
    s.act_c = r.take_compute_copy(c, {N, I});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B, int64_t T) const {
    const int64_t N = B * T, H = config_.hidden_size, I = config_.intermediate_size;
    Scratch w;
    w.spare = norm_scratch(r);
    if (reduced()) {  // LinearBias's f32 sums when a 16-bit output has a bias
      w.tmp_qkv = r.take(DType::f32, {N, 3 * H});
      w.tmp_wi = r.take(DType::f32, {N, 2 * I});
    }
    w.branch = r.take(DType::f32, {N, H});
    w.act = r.take(DType::f32, {N, I});
    w.d_rows = r.take(DType::f32, {N, H});
    w.d_rows_c = r.take_compute_copy(compute_, {N, H});
    w.d_h1 = r.take(DType::f32, {N, H});
    w.d_act = r.take(DType::f32, {N, I});
    w.d_wi = r.take(DType::f32, {N, 2 * I});
    w.d_wi_c = r.take_compute_copy(compute_, {N, 2 * I});
    w.d_qkv = r.take(DType::f32, {N, 3 * H});
    w.d_qkv_c = r.take_compute_copy(compute_, {N, 3 * H});
    w.d_ctx = r.take(DType::f32, {N, H});
    w.delta = r.take(DType::f32, {B, config_.num_attention_heads, T});
    return w;
  }

  void declare_parameters() override {
    const int64_t H = config_.hidden_size, I = config_.intermediate_size;
    if (!first_layer()) attn_norm_ = declare_norm("attn_norm.weight", "attn_norm.bias");
    qkv_weight_ = params_.weight("attn.Wqkv.weight", 3 * H, H);
    if (modern_.attention_bias) qkv_bias_ = params_.bias("attn.Wqkv.bias", 3 * H);
    out_weight_ = params_.weight("attn.Wo.weight", H, H);
    if (modern_.attention_bias) out_bias_ = params_.bias("attn.Wo.bias", H);
    mlp_norm_ = declare_norm("mlp_norm.weight", "mlp_norm.bias");
    wi_weight_ = params_.weight("mlp.Wi.weight", 2 * I, H);
    if (modern_.mlp_bias) wi_bias_ = params_.bias("mlp.Wi.bias", 2 * I);
    wo_weight_ = params_.weight("mlp.Wo.weight", H, I);
    if (modern_.mlp_bias) wo_bias_ = params_.bias("mlp.Wo.bias", H);
  }

  loom::RotaryEmbedding* rotary_ = nullptr;
  loom::GatedGelu* gated_gelu_ = nullptr;
  loom::WindowedAttention* attention_ = nullptr;
  loom::PackedAttention* packed_ = nullptr;  // packed batches, when the backend offers them
  Norm attn_norm_, mlp_norm_;
  size_t qkv_weight_ = 0, out_weight_ = 0, wi_weight_ = 0, wo_weight_ = 0;
  std::optional<size_t> qkv_bias_, out_bias_, wi_bias_, wo_bias_;
  Tensor input_view_;
};

}  // namespace

loom_component_desc encoder_layer_component() {
  return loom::component<loom::Block, EncoderLayer>(
      "modernbert.encoder-layer", "0.1.0",
      "pre-LN layer: rotary global/local attention, GeGLU MLP (ModernBERT)", loom::offers<loom::BackwardInput, loom::PackedTokens>{});
}

}  // namespace loom_modernbert
