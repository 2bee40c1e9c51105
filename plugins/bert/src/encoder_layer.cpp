// block/bert.encoder-layer, block/roberta.encoder-layer: one post-LN transformer layer of BERT
// (docs/reference.md §2.9); RoBERTa's is the same layer under `roberta.encoder.layer.{i}`.
//
//   q, k, v  = x·Wqᵀ + bq, x·Wkᵀ + bk, x·Wvᵀ + bv               (B, T, H) → heads (B, nh, T, d)
//   probs    = softmax(q·kᵀ / √d + key_mask)                     (B, nh, T, T)
//   ctx      = dropout(probs)·v                                  (B, T, H)
//   x1       = dropout(ctx·Woᵀ + bo) + x;   h1 = LayerNorm(x1)
//   u        = h1·Wiᵀ;   g = gelu(u + bi)                        (B, T, I)
//   x2       = dropout(g·W2ᵀ + b2) + h1;    out = LayerNorm(x2)
// Saved: q, k, v, probs, ctx (compute dtype), x1, x2 and LayerNorm statistics (f32), u (compute
// dtype); h1 in f32 compute, its 16-bit copy (only) in bf16/f16 compute, plus a 16-bit copy of x
// there — unless the host hands over the previous layer's copy of its output (HiddenCopy, then
// kept by the host; this layer likewise writes its own output's copy where the next one reads it).
// g is saved in f32 compute only: in 16-bit compute backward recomputes it from u into
// scratch (the same op on the same inputs, so the same bits), which keeps [B·T, I] per layer out of
// the saved activations — the largest tensor a layer would keep, and 16-bit compute is where
// device memory is short — for one bias + GELU pass per layer (on the CPU in f32 an erf per
// element, so there g is kept). Dropout masks are regenerated in backward from the Philox key
// (sites 0: attention probs, 1: attention output, 2: FFN output).
//
// When the backend offers fused attention (FusedAttention::fused_attention for this head size and the
// config's max_position_embeddings), the softmax and dropout of the first line and the product
// with v run as one op: probs is not saved (the op keeps the row log-sum-exp, [B, nh, T]) and
// the [B, nh, T, T] scratch disappears. The dropout bits are the same in both paths.
//
// Packed batches (loom/sdk/packed_tokens.hpp): every line but attention runs on the [N, H] rows of
// the real tokens as it would on [B·T, H]; attention runs within each sequence — through the
// backend's PackedAttention in the fused path, and in the unfused path as the same GEMMs and
// softmax per sequence, over [nh, L, L] matrices laid out one sequence after the other (Σ L² ≤ B·T²,
// so a packed batch fits the arena of its padded shape).
//
// When the backend offers ResidualLayerNorm, each "dropout(dense + bias) + residual, LayerNorm"
// (and its backward with the bias gradient) is one op instead of four; the results are the same.
//
// Wq, Wk, Wv are declared one after the other, then bq, bk, bv, so that in the host's flat
// buffers they are one [3H, H] weight and one [3H] bias (when H·4 bytes keeps the biases adjacent,
// checked at bind time): q, k and v are then one GEMM into a [B·T, 3H] activation, read per head
// through strided views, and backward is one GEMM for their weight gradient and one for dx.
#include <cmath>
#include <type_traits>

#include "bert_block.hpp"
#include "components.hpp"
#include "loom/sdk/hidden_copy.hpp"
#include "loom/sdk/ops/packed_attention.hpp"
#include "loom/sdk/packed_tokens.hpp"
#include "loom/sdk/ops/bias_gelu_backward_copy.hpp"
#include "loom/sdk/ops/residual_layernorm_backward_copy.hpp"
#include "loom/sdk/ops/residual_layernorm.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/saved_attention_bytes.hpp"
#include "loom_blocks/packed_sequences.hpp"
#include "loom_blocks/region_carver.hpp"

namespace loom_bert {
namespace {

using loom::DType;
using loom::Tensor;

template <const Family& kFamily>
class EncoderLayer final : public BertBlock,
                           public loom::SavedAttentionBytes,
                           public loom::HiddenCopy,
                           public loom::PackedTokens {
  // Regions of the arena; the fused path has lse and delta instead of the [B, nh, T, T] tensors.
  // q, k, v: [B·T, H] column blocks of one [B·T, 3H] region when the projections are one GEMM,
  // else three [B·T, H] blocks of it; either way the region's size is the same.
  struct Saved {
    Tensor x_c, qkv, q, k, v, probs, lse, ctx, x1, mean1, rstd1, h1, h1_c, u, g, x2, mean2, rstd2;
    size_t attention_bytes = 0;  // qkv through ctx: what attention keeps for its backward
  };
  // tmp: [B·T, H] at the start of tmp_qkv; h1: f32 LayerNorm output and g in 16-bit compute;
  // k_t: k transposed per head (unfused attention, transposed_heads).
  struct ForwardScratch {
    Tensor tmp, tmp_qkv, h1, g, scores, probs_dropped, k_t;
  };
  // d_attention_out: [B·T, H] at the start of d_qkv, free until attention; g: d_wide_c (16-bit
  // compute only); v_t: v transposed per head (unfused attention, transposed_heads).
  struct BackwardScratch {
    Tensor d_res, d_dense, d_dense_c, d_wide, d_wide_c, g, d_ctx, d_ctx_c, d_scores, d_scores_c, probs_dropped,
        v_t, d_qkv, d_qkv_c, d_q, d_k, d_v, d_attention_out, delta;
  };

 public:
  explicit EncoderLayer(loom::ComponentContext&) : BertBlock(kFamily, "encoder-layer") {}

  void setup(const loom::BlockSetup& setup) override {
    BertBlock::setup(setup);
    const int64_t head_dim = config_.hidden_size / config_.num_attention_heads;
    fused_ = fused_attention_ops_ != nullptr &&
             fused_attention_ops_->fused_attention(head_dim, config_.max_position_embeddings);
    packed_ops_ = loom::find_backend_interface<loom::PackedAttention>(setup);
    add_norm_ = loom::find_backend_interface<loom::ResidualLayerNorm>(setup);
    gelu_copy_ = loom::find_backend_interface<loom::BiasGeluBackwardCopy>(setup);
    add_norm_copy_ = loom::find_backend_interface<loom::ResidualLayerNormBackwardCopy>(setup);
  }

  loom::BlockRole role() const override { return loom::BlockRole::layer; }
  /// Packed batches: the unfused path on any backend, the fused one where the backend packs too.
  bool accepts_packed_tokens() const override { return !fused_ || packed_ops_ != nullptr; }
  const char* scope() const override { return kFamily.layer_scope; }
  /// In 16-bit compute backward reads the 16-bit copy of x, not the f32 input.
  bool backward_reads_input() const override { return !reduced(); }

  /// HiddenCopy: in 16-bit compute the layer's input and output both have a GEMM operand copy.
  bool writes_output_copy() const override { return reduced(); }
  bool reads_input_copy() const override { return reduced(); }
  void use_hidden_copies(bool input_copy, bool output_copy) override {
    input_copy_given_ = input_copy && reduced();
    output_copy_wanted_ = output_copy && reduced();
  }
  void set_hidden_copies(const Tensor& input_copy, const Tensor& output_copy) override {
    input_copy_ = input_copy;
    output_copy_ = output_copy;
  }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch, shape.seq);
    RegionCarver forward_scratch(nullptr, 0, {}, name_.c_str());
    carve_forward_scratch(forward_scratch, shape.batch, shape.seq);
    RegionCarver backward_scratch(nullptr, 0, {}, name_.c_str());
    carve_backward_scratch(backward_scratch, shape.batch, shape.seq);
    return {saved.used(), std::max(forward_scratch.used(), backward_scratch.used())};
  }
  size_t saved_attention_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    return carve_saved(saved, shape.batch, shape.seq).attention_bytes;
  }

  void forward(const loom::StepArgs& step, const Tensor& input, const Tensor& output) override {
    const int64_t B = step.batch->batch, T = step.batch->seq, H = config_.hidden_size, N = B * T;
    const int64_t pairs = loom_blocks::packed_pairs(*step.batch);
    RegionCarver saved_region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(saved_region, B, T, pairs);
    RegionCarver scratch_region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const ForwardScratch w = carve_forward_scratch(scratch_region, B, T, pairs);
    const Tensor x = input.reshape({N, H});
    input_ = x;  // in f32 compute unchanged until backward (block.hpp): the operand of dWq/dWk/dWv

    // Self-attention. x_c: the host's copy of x when it hands one over, else cast here.
    x_c_ = input_copy_given_ ? hidden_copy_view(input_copy_, N, "input") : to_compute(x, s.x_c);
    const Tensor& x_c = x_c_;
    if (qkv_) {
      project_qkv(x_c, w.tmp_qkv, s.qkv);
    } else {
      project(x_c, q_weight_, master(q_bias_), w.tmp, s.q);
      project(x_c, k_weight_, master(k_bias_), w.tmp, s.k);
      project(x_c, v_weight_, master(v_bias_), w.tmp, s.v);
    }
    if (fused_ && loom_blocks::is_packed(*step.batch)) {
      packed_ops_->packed_attention_forward(
          heads(s.q, B, T), heads(s.k, B, T), heads(s.v, B, T), step.batch->sequence_starts,
          step.batch->sequence_starts_host, step.batch->max_sequence, attention_scale(), -1, attention_dropout(step),
          dropout_key(step), 0, heads(s.ctx, B, T), s.lse);
    } else if (fused_) {
      fused_attention_ops_->attention_forward(
          heads(s.q, B, T), heads(s.k, B, T), heads(s.v, B, T), step.batch->attention_bias, attention_scale(),
          attention_dropout(step), dropout_key(step), 0, heads(s.ctx, B, T), s.lse);
    } else if (loom_blocks::is_packed(*step.batch)) {
      loom_blocks::for_each_sequence(*step.batch, [&](const loom_blocks::PackedSequence& q) {
        attention_unfused_forward(step, sequence_views(s, w, q));
      });
    } else {
      attention_unfused_forward(step, padded_views(step, s, w, B, T));
    }

    // Attention output: dense, then bias, dropout, residual and LayerNorm.
    linear_forward(s.ctx, out_weight_, Tensor{}, w.tmp);
    // h1 in f32 is needed by backward only in f32 compute (16-bit compute keeps h1_c instead).
    const Tensor h1 = reduced() ? w.h1 : s.h1;
    const Tensor h1_c = add_norm_forward(step, 1, w.tmp, out_bias_, x, ln1_gamma_, ln1_beta_, s.x1, h1,
                                         s.h1_c, s.mean1, s.rstd1);

    // Feed-forward: dense + GELU, dense, then bias, dropout, residual and LayerNorm.
    linear_forward(h1_c, ffn_in_weight_, Tensor{}, s.u);
    const Tensor g = reduced() ? w.g : s.g;
    be().bias_gelu_forward(s.u, master(ffn_in_bias_), g, gelu());
    linear_forward(g, ffn_out_weight_, Tensor{}, w.tmp);
    add_norm_forward(step, 2, w.tmp, ffn_out_bias_, h1, ln2_gamma_, ln2_beta_, s.x2, output.reshape({N, H}),
                     output_copy_wanted_ ? hidden_copy_view(output_copy_, N, "output") : Tensor{}, s.mean2,
                     s.rstd2);
  }

  void backward(const loom::StepArgs& step, const Tensor& d_output, const Tensor& d_input) override {
    const int64_t B = step.batch->batch, T = step.batch->seq, H = config_.hidden_size, N = B * T;
    const int64_t pairs = loom_blocks::packed_pairs(*step.batch);
    RegionCarver saved_region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    const Saved s = carve_saved(saved_region, B, T, pairs);
    RegionCarver scratch_region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const BackwardScratch w = carve_backward_scratch(scratch_region, B, T, pairs);
    const Tensor dy = d_output.reshape({N, H});
    const Tensor dx = d_input.reshape({N, H});

    // out = LayerNorm(x2), x2 = dropout(g·W2ᵀ + b2) + h1.
    const Tensor d_dense_c = add_norm_backward(step, 2, dy, s.x2, ln2_gamma_, ln2_beta_, ffn_out_bias_, s.mean2,
                                               s.rstd2, w.d_res, w.d_dense, w.d_dense_c);
    // In 16-bit compute g = gelu(u + bi) again, as forward computed it, into d_wide_c, which dGELU's
    // copy below overwrites once dW2 has read it.
    if (reduced()) be().bias_gelu_forward(s.u, master(ffn_in_bias_), w.g, gelu());
    linear_backward(w.d_dense, d_dense_c, reduced() ? w.g : s.g, ffn_out_weight_, Tensor{}, w.d_wide, 0.0f);
    // g = gelu(u + bi), u = h1·Wiᵀ. In 16-bit compute the next GEMM's operand is dGELU's 16-bit
    // copy, written in the same pass when the backend offers it; nothing reads the f32 dGELU after
    // that pass (its bias gradient is summed there), so it is not asked for.
    Tensor d_wide_c;
    if (reduced() && gelu_copy_ != nullptr) {
      gelu_copy_->bias_gelu_backward_copy(w.d_wide, s.u, master(ffn_in_bias_), Tensor{}, w.d_wide_c,
                                          grad(ffn_in_bias_), gelu());
      d_wide_c = w.d_wide_c;
    } else {
      be().bias_gelu_backward(w.d_wide, s.u, master(ffn_in_bias_), w.d_wide, grad(ffn_in_bias_), gelu());
      d_wide_c = to_compute(w.d_wide, w.d_wide_c);
    }
    // dh1 = the residual path's gradient (in d_res) + the feed-forward's: the GEMM adds onto d_res.
    const Tensor h1_c = reduced() ? s.h1_c : s.h1;
    linear_backward(w.d_wide, d_wide_c, h1_c, ffn_in_weight_, Tensor{}, w.d_res, 1.0f);

    // h1 = LayerNorm(x1), x1 = dropout(ctx·Woᵀ + bo) + x. The residual path's gradient goes straight
    // into dx, which the projections' GEMMs below add onto. d_q holds the dense layer's output
    // gradient until attention backward overwrites it.
    const Tensor d_attention_out_c = add_norm_backward(step, 1, w.d_res, s.x1, ln1_gamma_, ln1_beta_, out_bias_,
                                                       s.mean1, s.rstd1, dx, w.d_attention_out, w.d_dense_c);
    linear_backward(w.d_attention_out, d_attention_out_c, s.ctx, out_weight_, Tensor{}, w.d_ctx, 0.0f);

    if (fused_ && loom_blocks::is_packed(*step.batch)) {
      packed_ops_->packed_attention_backward(
          heads(w.d_ctx, B, T), heads(s.q, B, T), heads(s.k, B, T), heads(s.v, B, T), heads(s.ctx, B, T), s.lse,
          step.batch->sequence_starts, step.batch->sequence_starts_host, step.batch->max_sequence, attention_scale(),
          -1, attention_dropout(step), dropout_key(step), 0, heads(w.d_q, B, T), heads(w.d_k, B, T),
          heads(w.d_v, B, T), w.delta);
    } else if (fused_) {
      fused_attention_ops_->attention_backward(
          heads(w.d_ctx, B, T), heads(s.q, B, T), heads(s.k, B, T), heads(s.v, B, T), heads(s.ctx, B, T),
          s.lse, step.batch->attention_bias, attention_scale(), attention_dropout(step), dropout_key(step), 0,
          heads(w.d_q, B, T), heads(w.d_k, B, T), heads(w.d_v, B, T), w.delta);
    } else {
      // d_ctx as the GEMM operand, cast once for every sequence.
      const Tensor d_ctx_c = to_compute(w.d_ctx, w.d_ctx_c);
      if (loom_blocks::is_packed(*step.batch)) {
        loom_blocks::for_each_sequence(*step.batch, [&](const loom_blocks::PackedSequence& q) {
          attention_unfused_backward(step, sequence_views(s, w, q), sequence_views(w, d_ctx_c, q));
        });
      } else {
        attention_unfused_backward(step, padded_views(step, s, w, B, T), padded_views(w, d_ctx_c, B, T));
      }
    }

    // q, k, v = x·Wᵀ + b: weight/bias gradients, and dx added onto the residual path's gradient.
    const Tensor input_c = reduced() ? x_c_ : input_;
    if (qkv_) {
      const Tensor d_qkv_c = bias_grad_operand(w.d_qkv, qkv_.bias_grad, w.d_qkv_c);
      be().gemm(d_qkv_c, true, input_c, false, qkv_.weight_grad, 1.0f, 1.0f);
      be().gemm(d_qkv_c, false, qkv_.weight_compute, false, dx, 1.0f, 1.0f);
    } else {
      linear_backward(w.d_q, to_compute(w.d_q, w.d_dense_c), input_c, q_weight_, grad(q_bias_), dx, 1.0f);
      linear_backward(w.d_k, to_compute(w.d_k, w.d_dense_c), input_c, k_weight_, grad(k_bias_), dx, 1.0f);
      linear_backward(w.d_v, to_compute(w.d_v, w.d_dense_c), input_c, v_weight_, grad(v_bias_), dx, 1.0f);
    }
  }

 private:
  /// What one unfused attention call works on: [b, nh, t, d] head views and [b, nh, t, t] matrices
  /// — the whole padded batch, or one sequence of a packed one. `first`: the matrices' first
  /// element within the batch's (the dropout elements of one sequence follow the previous one's).
  struct UnfusedViews {
    Tensor q, k, v, ctx, key_mask, scores, probs, probs_dropped, k_t;
    uint64_t first = 0;
  };
  struct UnfusedGradients {
    Tensor d_ctx_c, d_q, d_k, d_v, d_scores, d_scores_c, probs_dropped, v_t;
  };
  UnfusedViews padded_views(const loom::StepArgs& step, const Saved& s, const ForwardScratch& w, int64_t B,
                            int64_t T) const {
    return {heads(s.q, B, T), heads(s.k, B, T), heads(s.v, B, T), heads(s.ctx, B, T), step.batch->attention_bias,
            w.scores, s.probs, w.probs_dropped, transposed_heads(w.k_t, 0, B, T)};
  }
  UnfusedViews padded_views(const loom::StepArgs& step, const Saved& s, const BackwardScratch& w, int64_t B,
                            int64_t T) const {
    return {heads(s.q, B, T), heads(s.k, B, T), heads(s.v, B, T), heads(s.ctx, B, T), step.batch->attention_bias,
            Tensor{}, s.probs, w.probs_dropped, Tensor{}};
  }
  UnfusedGradients padded_views(const BackwardScratch& w, const Tensor& d_ctx_c, int64_t B, int64_t T) const {
    return {heads(d_ctx_c, B, T), heads(w.d_q, B, T), heads(w.d_k, B, T), heads(w.d_v, B, T),
            w.d_scores, w.d_scores_c, w.probs_dropped, transposed_heads(w.v_t, 0, B, T)};
  }
  /// Sequence `q` of a packed batch: rows [start, start + L) of the [1, nh, N, d] head views and the
  /// [1, nh, L, L] matrices at its place in the flat attention regions.
  Tensor sequence_rows(const Tensor& x, const loom_blocks::PackedSequence& q) const {
    return heads(x, 1, x.shape[0]).narrow(2, q.start, q.length);
  }
  Tensor sequence_matrices(const Tensor& region, const loom_blocks::PackedSequence& q) const {
    if (!region.defined()) return region;
    const int64_t nh = config_.num_attention_heads;
    return Tensor::contiguous(static_cast<char*>(region.data) + q.pairs_before * nh * loom::dtype_size(region.dtype),
                              region.dtype, {1, nh, q.length, q.length}, region.device);
  }
  /// [b, nh, d, t] contiguous in `region` from token row `first_row` on: where k (forward) or v
  /// (backward) is copied transposed, so that q·kᵀ and d_ctx·vᵀ take a plain operand. oneDNN picks
  /// its kernel for a transposed operand by shape, and those kernels round differently: a padded
  /// batch's scores would differ in the last bits from the same sequence's alone. With plain operands
  /// its results do not depend on the shape, so a sequence's attention is the same bits packed or
  /// padded (docs/unpadded.md).
  Tensor transposed_heads(const Tensor& region, int64_t first_row, int64_t b, int64_t t) const {
    const int64_t H = config_.hidden_size, nh = config_.num_attention_heads;
    return Tensor::contiguous(static_cast<char*>(region.data) + first_row * H * loom::dtype_size(region.dtype),
                              region.dtype, {b, nh, H / nh, t}, region.device);
  }
  template <typename Scratch>
  UnfusedViews sequence_views(const Saved& s, const Scratch& w, const loom_blocks::PackedSequence& q) const {
    Tensor scores, k_t;
    if constexpr (std::is_same_v<Scratch, ForwardScratch>) {
      scores = sequence_matrices(w.scores, q);
      k_t = transposed_heads(w.k_t, q.start, 1, q.length);
    }
    return {sequence_rows(s.q, q),
            sequence_rows(s.k, q),
            sequence_rows(s.v, q),
            sequence_rows(s.ctx, q),
            Tensor{},
            scores,
            sequence_matrices(s.probs, q),
            sequence_matrices(w.probs_dropped, q),
            k_t,
            static_cast<uint64_t>(q.pairs_before * config_.num_attention_heads)};
  }
  UnfusedGradients sequence_views(const BackwardScratch& w, const Tensor& d_ctx_c,
                                  const loom_blocks::PackedSequence& q) const {
    return {sequence_rows(d_ctx_c, q),          sequence_rows(w.d_q, q),
            sequence_rows(w.d_k, q),            sequence_rows(w.d_v, q),
            sequence_matrices(w.d_scores, q),   sequence_matrices(w.d_scores_c, q),
            sequence_matrices(w.probs_dropped, q), transposed_heads(w.v_t, q.start, 1, q.length)};
  }

  /// probs = softmax(q·kᵀ·scale + mask) (saved), ctx = dropout(probs)·v.
  void attention_unfused_forward(const loom::StepArgs& step, const UnfusedViews& a) const {
    be().copy(a.k.permute({0, 1, 3, 2}), a.k_t);
    be().gemm(a.q, false, a.k_t, false, a.scores, 1.0f, 0.0f);
    be().softmax_forward(a.scores, a.key_mask, attention_scale(), a.probs);
    const float p_attention = config_.attention_probs_dropout_prob;
    const Tensor probs_used = dropout_active(step, p_attention) ? a.probs_dropped : a.probs;
    dropout_forward(step, a.probs, probs_used, p_attention, 0, a.first);
    be().gemm(probs_used, false, a.v, false, a.ctx, 1.0f, 0.0f);
  }

  /// d_q, d_k, d_v from d_ctx through the saved probs (ctx = dropout(probs)·v per head).
  void attention_unfused_backward(const loom::StepArgs& step, const UnfusedViews& a,
                                  const UnfusedGradients& g) const {
    const float p_attention = config_.attention_probs_dropout_prob;
    be().copy(a.v.permute({0, 1, 3, 2}), g.v_t);
    be().gemm(g.d_ctx_c, false, g.v_t, false, g.d_scores, 1.0f, 0.0f);
    const Tensor probs_used = dropout_active(step, p_attention) ? g.probs_dropped : a.probs;
    dropout_forward(step, a.probs, probs_used, p_attention, 0, a.first);
    be().gemm(probs_used, true, g.d_ctx_c, false, g.d_v, 1.0f, 0.0f);
    dropout_backward(step, g.d_scores, g.d_scores, p_attention, 0, a.first);
    be().softmax_backward(g.d_scores, a.probs, attention_scale(), g.d_scores);
    const Tensor d_scores_c = to_compute(g.d_scores, g.d_scores_c);
    be().gemm(d_scores_c, false, a.k, false, g.d_q, 1.0f, 0.0f);
    be().gemm(d_scores_c, true, a.q, false, g.d_k, 1.0f, 0.0f);
  }

  /// sum = dropout(y + bias) + residual, out = LayerNorm(sum) at dropout `site` (y is overwritten
  /// on the separate-ops path), and out's 16-bit copy in out_c when out_c is given (16-bit
  /// compute; take_compute_copy leaves it absent in f32). Returns out as a GEMM operand: out_c when
  /// given, else out.
  Tensor add_norm_forward(const loom::StepArgs& step, uint64_t site, const Tensor& y, size_t bias,
                          const Tensor& residual, size_t gamma, size_t beta, const Tensor& sum,
                          const Tensor& out, const Tensor& out_c, const Tensor& mean,
                          const Tensor& rstd) const {
    if (add_norm_ != nullptr) {
      add_norm_->residual_layernorm_forward(
          y, master(bias), residual, hidden_dropout(step), dropout_key(step), site << kDropoutSiteShift,
          master(gamma), master(beta), config_.layer_norm_eps, sum, out, out_c, mean, rstd);
    } else {
      be().bias_add(y, master(bias));
      dropout_forward(step, y, y, config_.hidden_dropout_prob, site);
      be().add(y, residual, sum);
      be().layernorm_forward(sum, master(gamma), master(beta), config_.layer_norm_eps, out, mean, rstd);
      if (out_c.defined()) be().cast(out, out_c);
    }
    return out_c.defined() ? out_c : out;
  }
  /// Gradients of add_norm_forward from d_out: d_sum (the residual's), d_branch (y's; may not alias
  /// d_out), and γ, β and bias gradients accumulated. Returns d_branch as the operand of the next
  /// GEMMs: in 16-bit compute its copy in d_branch_c — stored by the fused op's own pass when the
  /// backend offers ResidualLayerNormBackwardCopy, else cast — and in f32 compute d_branch itself.
  Tensor add_norm_backward(const loom::StepArgs& step, uint64_t site, const Tensor& d_out, const Tensor& sum,
                           size_t gamma, size_t beta, size_t bias, const Tensor& mean, const Tensor& rstd,
                           const Tensor& d_sum, const Tensor& d_branch, const Tensor& d_branch_c) const {
    if (add_norm_ != nullptr && add_norm_copy_ != nullptr && reduced()) {
      add_norm_copy_->residual_layernorm_backward_copy(
          d_out, sum, master(gamma), mean, rstd, hidden_dropout(step), dropout_key(step),
          site << kDropoutSiteShift, d_sum, d_branch, d_branch_c, grad(gamma), grad(beta), grad(bias));
      return d_branch_c;
    }
    add_norm_gradients(step, site, d_out, sum, gamma, beta, bias, mean, rstd, d_sum, d_branch);
    return to_compute(d_branch, d_branch_c);
  }
  /// add_norm_backward's f32 gradients: the fused op when offered, else the separate ops.
  void add_norm_gradients(const loom::StepArgs& step, uint64_t site, const Tensor& d_out,
                                    const Tensor& sum, size_t gamma, size_t beta, size_t bias, const Tensor& mean,
                                    const Tensor& rstd, const Tensor& d_sum, const Tensor& d_branch) const {
    if (add_norm_ != nullptr) {
      add_norm_->residual_layernorm_backward(d_out, sum, master(gamma), mean, rstd, hidden_dropout(step),
                                             dropout_key(step), site << kDropoutSiteShift, d_sum, d_branch,
                                             grad(gamma), grad(beta), grad(bias));
      return;
    }
    be().layernorm_backward(d_out, sum, master(gamma), mean, rstd, d_sum, grad(gamma), grad(beta), false);
    dropout_backward(step, d_sum, d_branch, config_.hidden_dropout_prob, site);
    be().bias_grad(d_branch, grad(bias));
  }
  /// The hidden-state dropout of this step (0 when not training).
  float hidden_dropout(const loom::StepArgs& step) const {
    return dropout_active(step, config_.hidden_dropout_prob) ? config_.hidden_dropout_prob : 0.0f;
  }

  /// The attention-probability dropout of this step (0 when not training).
  float attention_dropout(const loom::StepArgs& step) const {
    return dropout_active(step, config_.attention_probs_dropout_prob) ? config_.attention_probs_dropout_prob
                                                                      : 0.0f;
  }

  /// `pairs`: Σ L² of a packed batch's sequences (0: padded), whose attention matrices lie one
  /// sequence after the other.
  Saved carve_saved(RegionCarver& r, int64_t B, int64_t T, int64_t pairs = 0) const {
    const int64_t N = B * T, H = config_.hidden_size, I = config_.intermediate_size,
                  heads = config_.num_attention_heads;
    const DType c = compute_;
    Saved s;
    if (!input_copy_given_) s.x_c = r.take_compute_copy(compute_, {N, H});
    const size_t attention_start = r.used();
    s.qkv = r.take(c, {N, 3 * H});
    split_qkv(s.qkv, s.q, s.k, s.v);
    if (fused_)
      s.lse = r.take(DType::f32, {B, heads, T});
    else
      s.probs = pairs > 0 ? r.take(c, {heads * pairs}) : r.take(c, {B, heads, T, T});
    s.ctx = r.take(c, {N, H});
    s.attention_bytes = r.used() - attention_start;
    s.x1 = r.take(DType::f32, {N, H});
    s.mean1 = r.take(DType::f32, {N});
    s.rstd1 = r.take(DType::f32, {N});
    if (!reduced()) s.h1 = r.take(DType::f32, {N, H});
    s.h1_c = r.take_compute_copy(compute_, {N, H});
    s.u = r.take(c, {N, I});
    if (!reduced()) s.g = r.take(c, {N, I});
    s.x2 = r.take(DType::f32, {N, H});
    s.mean2 = r.take(DType::f32, {N});
    s.rstd2 = r.take(DType::f32, {N});
    return s;
  }
  ForwardScratch carve_forward_scratch(RegionCarver& r, int64_t B, int64_t T, int64_t pairs = 0) const {
    const int64_t N = B * T, H = config_.hidden_size, heads = config_.num_attention_heads;
    ForwardScratch w;
    w.tmp_qkv = r.take(DType::f32, {N, 3 * H});
    w.tmp = loom::Tensor::contiguous(w.tmp_qkv.data, DType::f32, {N, H}, w.tmp_qkv.device);
    if (reduced()) w.h1 = r.take(DType::f32, {N, H});
    if (reduced()) w.g = r.take(compute_, {N, config_.intermediate_size});
    if (!fused_) {
      w.scores = pairs > 0 ? r.take(DType::f32, {heads * pairs}) : r.take(DType::f32, {B, heads, T, T});
      w.probs_dropped = pairs > 0 ? r.take(compute_, {heads * pairs}) : r.take(compute_, {B, heads, T, T});
      w.k_t = r.take(compute_, {N, H});
    }
    return w;
  }
  BackwardScratch carve_backward_scratch(RegionCarver& r, int64_t B, int64_t T, int64_t pairs = 0) const {
    const int64_t N = B * T, H = config_.hidden_size, I = config_.intermediate_size,
                  heads = config_.num_attention_heads;
    BackwardScratch w;
    w.d_res = r.take(DType::f32, {N, H});
    w.d_dense = r.take(DType::f32, {N, H});
    w.d_dense_c = r.take_compute_copy(compute_, {N, H});
    w.d_wide = r.take(DType::f32, {N, I});
    w.d_wide_c = r.take_compute_copy(compute_, {N, I});
    w.g = w.d_wide_c;  // absent in f32 compute, where g is saved
    w.d_ctx = r.take(DType::f32, {N, H});
    if (fused_) {
      w.delta = r.take(DType::f32, {B, heads, T});
    } else {
      w.d_ctx_c = r.take_compute_copy(compute_, {N, H});
      w.v_t = r.take(compute_, {N, H});
      if (pairs > 0) {
        w.d_scores = r.take(DType::f32, {heads * pairs});
        w.d_scores_c = r.take_compute_copy(compute_, {heads * pairs});
        w.probs_dropped = r.take(compute_, {heads * pairs});
      } else {
        w.d_scores = r.take(DType::f32, {B, heads, T, T});
        w.d_scores_c = r.take_compute_copy(compute_, {B, heads, T, T});
        w.probs_dropped = r.take(compute_, {B, heads, T, T});
      }
    }
    w.d_qkv = r.take(DType::f32, {N, 3 * H});
    w.d_qkv_c = r.take_compute_copy(compute_, {N, 3 * H});
    split_qkv(w.d_qkv, w.d_q, w.d_k, w.d_v);
    w.d_attention_out = loom::Tensor::contiguous(w.d_qkv.data, DType::f32, {N, H}, w.d_qkv.device);
    return w;
  }

  /// q, k, v of a [B·T, 3H] region: its column blocks when the projections are one GEMM, else its
  /// three consecutive [B·T, H] blocks.
  void split_qkv(const Tensor& region, Tensor& q, Tensor& k, Tensor& v) const {
    const int64_t N = region.shape[0], H = config_.hidden_size;
    Tensor* parts[3] = {&q, &k, &v};
    for (int i = 0; i < 3; ++i)
      *parts[i] = qkv_ ? region.narrow(1, i * H, H)
                       : loom::Tensor::contiguous(
                             static_cast<char*>(region.data) + i * N * H * loom::dtype_size(region.dtype),
                             region.dtype, {N, H}, region.device);
  }
  /// qkv (compute dtype) = x_c·[Wq; Wk; Wv]ᵀ + [bq; bk; bv], through the f32 `tmp_qkv` when 16-bit
  /// and the backend does not add the bias in the GEMM.
  void project_qkv(const Tensor& x_c, const Tensor& tmp_qkv, const Tensor& qkv) const {
    linear_bias_forward(x_c, qkv_.weight_compute, qkv_.bias, qkv, reduced() ? tmp_qkv : Tensor{});
  }
  float attention_scale() const {
    return 1.0f / std::sqrt(static_cast<float>(config_.hidden_size / config_.num_attention_heads));
  }
  /// out (compute dtype) = x_c·Wᵀ + b, through the f32 `tmp` when out is 16-bit and the backend does
  /// not add the bias in the GEMM.
  void project(const Tensor& x_c, size_t weight, const Tensor& bias, const Tensor& tmp,
               const Tensor& out) const {
    linear_bias_forward(x_c, weight, bias, out, reduced() ? tmp : Tensor{});
  }

  void declare_parameters() override {
    const int64_t H = config_.hidden_size, I = config_.intermediate_size;
    // Weights, then biases: adjacent in the flat buffers (see the top of this file).
    q_weight_ = params_.weight("attention.self.query.weight", H, H);
    k_weight_ = params_.weight("attention.self.key.weight", H, H);
    v_weight_ = params_.weight("attention.self.value.weight", H, H);
    q_bias_ = params_.bias("attention.self.query.bias", H);
    k_bias_ = params_.bias("attention.self.key.bias", H);
    v_bias_ = params_.bias("attention.self.value.bias", H);
    out_weight_ = params_.weight("attention.output.dense.weight", H, H);
    out_bias_ = params_.bias("attention.output.dense.bias", H);
    ln1_gamma_ = params_.gamma("attention.output.LayerNorm.weight", H);
    ln1_beta_ = params_.bias("attention.output.LayerNorm.bias", H);
    ffn_in_weight_ = params_.weight("intermediate.dense.weight", I, H);
    ffn_in_bias_ = params_.bias("intermediate.dense.bias", I);
    ffn_out_weight_ = params_.weight("output.dense.weight", H, I);
    ffn_out_bias_ = params_.bias("output.dense.bias", H);
    ln2_gamma_ = params_.gamma("output.LayerNorm.weight", H);
    ln2_beta_ = params_.bias("output.LayerNorm.bias", H);
  }

  void bind_parameters(const loom::ParameterView* views, size_t count) override {
    BertBlock::bind_parameters(views, count);
    qkv_ = bind_qkv();
  }

  /// The [3H, H] weight and [3H] bias views over Wq, Wk, Wv and bq, bk, bv, when each view kind
  /// (master, gradient, working copy) holds them one after the other.
  struct QkvViews {
    Tensor weight_compute, weight_grad, bias, bias_grad;
    explicit operator bool() const { return weight_compute.defined(); }
  };
  QkvViews bind_qkv() const {
    const int64_t H = config_.hidden_size;
    const auto follow = [](const Tensor& a, const Tensor& b, const Tensor& c) {
      const char* end_a = static_cast<const char*>(a.data) + a.nbytes();
      const char* end_b = static_cast<const char*>(b.data) + b.nbytes();
      return a.is_contiguous() && b.is_contiguous() && c.is_contiguous() && a.dtype == b.dtype &&
             b.dtype == c.dtype && b.data == end_a && c.data == end_b;
    };
    const loom::ParameterView &q = params_.view(q_weight_), &k = params_.view(k_weight_),
                              &v = params_.view(v_weight_), &qb = params_.view(q_bias_),
                              &kb = params_.view(k_bias_), &vb = params_.view(v_bias_);
    if (!follow(q.compute, k.compute, v.compute) || !follow(q.grad, k.grad, v.grad) ||
        !follow(qb.master, kb.master, vb.master) || !follow(qb.grad, kb.grad, vb.grad))
      return {};
    return {Tensor::contiguous(q.compute.data, q.compute.dtype, {3 * H, H}, q.compute.device),
            Tensor::contiguous(q.grad.data, q.grad.dtype, {3 * H, H}, q.grad.device),
            Tensor::contiguous(qb.master.data, qb.master.dtype, {3 * H}, qb.master.device),
            Tensor::contiguous(qb.grad.data, qb.grad.dtype, {3 * H}, qb.grad.device)};
  }

  /// A copy the host handed over, as [N, H]: it must be this batch's, in the compute dtype.
  Tensor hidden_copy_view(const Tensor& copy, int64_t N, const char* which) const {
    const int64_t H = config_.hidden_size;
    if (!copy.defined() || copy.dtype != compute_ || copy.numel() != N * H || !copy.is_contiguous())
      throw loom::Error(name_ + ": the " + std::string(which) + " copy the host handed over is " +
                        (copy.defined() ? copy.describe() : std::string("absent")) + "; expected " +
                        loom::dtype_name(compute_) + " [" + std::to_string(N) + ", " + std::to_string(H) + "]");
    return copy.reshape({N, H});
  }

  Tensor input_;        // forward's input, [N, H]
  Tensor x_c_;          // forward's input as a GEMM operand in 16-bit compute (saved or handed over)
  Tensor input_copy_, output_copy_;  // HiddenCopy: this forward's copies, when used
  bool input_copy_given_ = false, output_copy_wanted_ = false;
  QkvViews qkv_;        // the projections as one GEMM, when the parameters allow it (bind time)
  bool fused_ = false;  // attention through the backend's fused op (decided at setup)
  loom::PackedAttention* packed_ops_ = nullptr;  // the backend's packed attention, when offered
  loom::ResidualLayerNorm* add_norm_ = nullptr;  // the backend's fused add & norm, when offered
  loom::BiasGeluBackwardCopy* gelu_copy_ = nullptr;  // dGELU with its 16-bit copy, when offered
  loom::ResidualLayerNormBackwardCopy* add_norm_copy_ = nullptr;  // add & norm backward with d_branch's copy
  size_t q_weight_ = 0, q_bias_ = 0, k_weight_ = 0, k_bias_ = 0, v_weight_ = 0, v_bias_ = 0, out_weight_ = 0,
         out_bias_ = 0, ln1_gamma_ = 0, ln1_beta_ = 0, ffn_in_weight_ = 0, ffn_in_bias_ = 0,
         ffn_out_weight_ = 0, ffn_out_bias_ = 0, ln2_gamma_ = 0, ln2_beta_ = 0;
};

}  // namespace

loom_component_desc encoder_layer_component() {
  return loom::component<loom::Block, EncoderLayer<kBert>>(
      "bert.encoder-layer", "0.1.0",
      "post-LN self-attention (key padding mask) + GELU feed-forward, with dropout",
      loom::offers<loom::SavedAttentionBytes, loom::BackwardInput, loom::HiddenCopy, loom::PackedTokens>{});
}

loom_component_desc roberta_encoder_layer_component() {
  return loom::component<loom::Block, EncoderLayer<kRoberta>>(
      "roberta.encoder-layer", "0.1.0",
      "post-LN self-attention (key padding mask) + GELU feed-forward, with dropout (RoBERTa's names)",
      loom::offers<loom::SavedAttentionBytes, loom::BackwardInput, loom::HiddenCopy, loom::PackedTokens>{});
}

}  // namespace loom_bert
