// block/bert.pretraining-heads: NSP on the pooled [CLS] and MLM on the labelled positions only.
//
//   nsp_logits = pooled·Wnᵀ + bn                                      (B, 2)
//   rows       = h[masked_rows]                                       (M, H)  gathered BEFORE the
//   z          = LayerNorm(gelu(rows·Wtᵀ + bt))                       (M, H)  V×H decoder GEMM
//   logits     = z·Eᵀ + bias,  E = word embeddings (tied)              (M, V) in rows of stride Vp
//   loss       = CE_mean(logits, masked_labels) + CE_mean(nsp_logits, next_sentence_labels)
// Logit rows are padded to Vp = vocab rounded up to 8 (aligned rows, as NVIDIA pads); the padding
// columns are never computed nor read, and no parameter is padded (docs/decisions/vocab-padding.md).
// Where the backend's GEMMs want their extents a multiple of m (GemmExtentAlignment: 8 for 16-bit
// operands on backend/cuda), the three decoder GEMMs run over the first V − V mod m classes, an
// aligned extent, and over the remaining V mod m classes in a small GEMM each; no GEMM reads or
// writes past the weight, its gradient or the class columns, and no memory is added.
// Forward computes the losses and, per labelled row, whether its first arg-max is its label (the
// loss op finds the maximum anyway): output masked_prediction_correct, from which a log step's
// masked-LM accuracy is M × 4 bytes to read instead of the [M, V] logits. Backward recomputes the
// softmax while turning the logits into their gradient in place, so the logits stay readable as an
// output until backward.
#include "components.hpp"
#include "loom/sdk/model_architecture.hpp"
#include "loom/sdk/ops/gemm_extent_alignment.hpp"
#include "loom/sdk/plugin.hpp"
#include "pooler.hpp"

namespace loom_bert {
namespace {

using loom::DType;
using loom::Tensor;

class PretrainingHeads final : public PoolerHead, public loom::ModelArchitecture {
 public:
  const char* architecture() const override { return "BertForPreTraining"; }
  explicit PretrainingHeads(loom::ComponentContext&) : PoolerHead(kBert, "pretraining-heads") {}

  void setup(const loom::BlockSetup& setup) override {
    PoolerHead::setup(setup);
    const auto* alignment = loom::find_backend_interface<loom::GemmExtentAlignment>(setup);
    const int64_t multiple = alignment != nullptr ? alignment->gemm_extent_multiple(compute_) : 1;
    const int64_t V = config_.vocab_size;
    aligned_vocab_ = multiple > 1 && V > multiple ? V - V % multiple : V;
  }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch, shape.max_masked);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    carve_scratch(scratch, shape.batch, shape.max_masked);
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const Tensor& input, const Tensor& output) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size, M = batch.num_masked;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    s_ = carve_saved(region, B, M);
    batch_ = B;
    masked_ = M;

    const Tensor pooled_c = pooler_forward(input, s_.pooler);
    linear_forward(pooled_c, nsp_weight_, master(nsp_bias_), s_.nsp_logits);
    if (batch.next_sentence_labels.defined())
      be().cross_entropy(s_.nsp_logits, batch.next_sentence_labels, 2, loom::kIgnoreIndex, 1.0f, s_.nsp_loss,
                         {}, {}, {});
    else
      be().zero(s_.nsp_loss);

    if (M > 0) {
      be().embedding_gather(input.reshape({B * T, H}), batch.masked_rows, s_.rows, false);
      const Tensor rows_c = to_compute(s_.rows, s_.rows_c);
      linear_forward(rows_c, transform_weight_, Tensor{}, s_.transform);
      be().bias_gelu_forward(s_.transform, master(transform_bias_), s_.activated, gelu());
      be().layernorm_forward(s_.activated, master(ln_gamma_), master(ln_beta_), config_.layer_norm_eps, s_.z,
                             s_.mean, s_.rstd);
      const Tensor z_c = to_compute(s_.z, s_.z_c);
      // logits = z·Wᵀ + bias into the padded rows: one product with the bias in its epilogue per
      // part where the backend offers LinearBias, else the bias broadcast in, then the products.
      const Tensor logits = class_columns(s_.logits);
      if (linear_bias_ == nullptr) be().copy(broadcast_rows(master(decoder_bias_), M), logits);
      for_vocab_parts([&](int64_t at, int64_t n) {
        const Tensor weight = compute(decoder_weight_).narrow(0, at, n), part = logits.narrow(1, at, n);
        if (linear_bias_ != nullptr)
          linear_bias_->linear_bias_forward(z_c, weight, master(decoder_bias_).narrow(0, at, n), part, Tensor{});
        else
          be().gemm(z_c, false, weight, true, part, 1.0f, 1.0f);
      });
      be().cross_entropy(s_.logits, batch.masked_labels, config_.vocab_size, loom::kIgnoreIndex, 1.0f,
                         s_.mlm_loss, {}, {}, s_.mlm_correct);
    } else {
      be().zero(s_.mlm_loss);
    }
    be().add(s_.mlm_loss, s_.nsp_loss, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size, M = batch.num_masked;
    RegionCarver region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(region, B, M);
    be().zero(d_input);

    if (M > 0) {
      // Softmax − onehot, in place over the logits (loss recomputed into a scratch scalar).
      be().cross_entropy(s_.logits, batch.masked_labels, config_.vocab_size, loom::kIgnoreIndex,
                         step.loss_scale, w.loss, s_.logits, {}, {});
      const Tensor d_logits = class_columns(s_.logits);
      be().fill(w.ones, 1.0);
      be().gemm(w.ones, false, d_logits, false, grad(decoder_bias_).reshape({1, config_.vocab_size}), 1.0f,
                1.0f);
      Tensor d_logits_c = d_logits;
      if (reduced()) {
        be().cast(s_.logits, w.d_logits_c);
        d_logits_c = class_columns(w.d_logits_c);
      }
      const Tensor z_c = reduced() ? s_.z_c : s_.z;
      for_vocab_parts([&](int64_t at, int64_t n) {
        const Tensor d_part = d_logits_c.narrow(1, at, n);
        be().gemm(d_part, true, z_c, false, grad(decoder_weight_).narrow(0, at, n), 1.0f, 1.0f);
        be().gemm(d_part, false, compute(decoder_weight_).narrow(0, at, n), false, w.d_rows_a, 1.0f,
                  at == 0 ? 0.0f : 1.0f);
      });
      be().layernorm_backward(w.d_rows_a, s_.activated, master(ln_gamma_), s_.mean, s_.rstd, w.d_rows_b,
                              grad(ln_gamma_), grad(ln_beta_), false);
      be().bias_gelu_backward(w.d_rows_b, s_.transform, master(transform_bias_), w.d_rows_b,
                              grad(transform_bias_), gelu());
      const Tensor rows_c = reduced() ? s_.rows_c : s_.rows;
      linear_backward(w.d_rows_b, to_compute(w.d_rows_b, w.d_rows_c), rows_c, transform_weight_, Tensor{},
                      w.d_rows_a, 0.0f);
      be().embedding_scatter_add(w.d_rows_a, batch.masked_rows, d_input.reshape({B * T, H}));
    }

    if (batch.next_sentence_labels.defined()) {
      be().cross_entropy(s_.nsp_logits, batch.next_sentence_labels, 2, loom::kIgnoreIndex, step.loss_scale,
                         w.loss, w.d_nsp, {}, {});
      const Tensor pooled_c = reduced() ? s_.pooler.pooled_c : s_.pooler.pooled;
      linear_backward(w.d_nsp, to_compute(w.d_nsp, w.d_nsp_c), pooled_c, nsp_weight_, grad(nsp_bias_),
                      w.d_pooled, 0.0f);
      pooler_backward(w.d_pooled, w.d_pooled_c, s_.pooler, d_input);
    }
  }

  size_t output_count() const override { return 5; }
  loom::BlockOutput output(size_t index) const override {
    switch (index) {
      case 0:
        return {"mlm_loss", s_.mlm_loss};
      case 1:
        return {"nsp_loss", s_.nsp_loss};
      case 2:
        return {"seq_relationship_logits", s_.nsp_logits};
      case 3:
        return {"masked_prediction_logits", masked_ > 0 ? class_columns(s_.logits) : Tensor{}};
      case 4:  // i32 [M]: 1 where the first arg-max of the row's logits is its label (cross_entropy's)
        return {"masked_prediction_correct", masked_ > 0 ? s_.mlm_correct : Tensor{}};
    }
    throw loom::Error(name_ + ": no output " + std::to_string(index));
  }

 private:
  struct Saved {
    PoolerSaved pooler;
    Tensor nsp_logits, nsp_loss, mlm_loss, rows, rows_c, transform, activated, mean, rstd, z, z_c, logits,
        mlm_correct;
  };
  struct Scratch {
    Tensor loss, ones, d_logits_c, d_rows_a, d_rows_b, d_rows_c, d_nsp, d_nsp_c, d_pooled, d_pooled_c;
  };

  int64_t padded_vocab() const { return loom::padded_vocab_size(config_); }
  /// Calls f(at, n) for the class ranges [at, at + n) the decoder GEMMs run over: [0, V) alone, or
  /// the aligned [0, aligned_vocab_) and then the remainder [aligned_vocab_, V).
  template <typename F>
  void for_vocab_parts(F&& f) const {
    f(int64_t{0}, aligned_vocab_);
    if (aligned_vocab_ < config_.vocab_size) f(aligned_vocab_, config_.vocab_size - aligned_vocab_);
  }
  /// The class columns [M, V] of padded logits [M, Vp] (row stride Vp).
  Tensor class_columns(const Tensor& logits) const { return logits.narrow(1, 0, config_.vocab_size); }
  /// bias [V] seen as [M, V] with row stride 0.
  static Tensor broadcast_rows(const Tensor& bias, int64_t rows) {
    Tensor t = bias;
    t.ndim = 2;
    t.shape[0] = rows;
    t.shape[1] = bias.shape[0];
    t.strides[0] = 0;
    t.strides[1] = 1;
    return t;
  }

  Saved carve_saved(RegionCarver& r, int64_t B, int64_t M) const {
    const int64_t H = config_.hidden_size;
    const DType c = compute_;
    Saved s;
    s.pooler = carve_pooler(r, B);
    s.nsp_logits = r.take(DType::f32, {B, 2});
    s.nsp_loss = r.take(DType::f32, {1});
    s.mlm_loss = r.take(DType::f32, {1});
    if (M == 0) return s;
    s.rows = r.take(DType::f32, {M, H});
    s.rows_c = r.take_compute_copy(compute_, {M, H});
    s.transform = r.take(c, {M, H});
    s.activated = r.take(DType::f32, {M, H});
    s.mean = r.take(DType::f32, {M});
    s.rstd = r.take(DType::f32, {M});
    s.z = r.take(DType::f32, {M, H});
    s.z_c = r.take_compute_copy(compute_, {M, H});
    s.logits = r.take(DType::f32, {M, padded_vocab()});
    s.mlm_correct = r.take(DType::i32, {M});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B, int64_t M) const {
    const int64_t H = config_.hidden_size;
    Scratch w;
    w.loss = r.take(DType::f32, {1});
    w.d_nsp = r.take(DType::f32, {B, 2});
    w.d_nsp_c = r.take_compute_copy(compute_, {B, 2});
    w.d_pooled = r.take(DType::f32, {B, H});
    w.d_pooled_c = r.take_compute_copy(compute_, {B, H});
    if (M == 0) return w;
    w.ones = r.take(DType::f32, {1, M});
    w.d_logits_c = r.take_compute_copy(compute_, {M, padded_vocab()});
    w.d_rows_a = r.take(DType::f32, {M, H});
    w.d_rows_b = r.take(DType::f32, {M, H});
    w.d_rows_c = r.take_compute_copy(compute_, {M, H});
    return w;
  }

  void declare_parameters() override {
    const int64_t H = config_.hidden_size, V = config_.vocab_size;
    declare_pooler();
    decoder_bias_ = params_.bias("cls.predictions.bias", V);
    transform_weight_ = params_.weight("cls.predictions.transform.dense.weight", H, H);
    transform_bias_ = params_.bias("cls.predictions.transform.dense.bias", H);
    ln_gamma_ = params_.gamma("cls.predictions.transform.LayerNorm.weight", H);
    ln_beta_ = params_.bias("cls.predictions.transform.LayerNorm.bias", H);
    decoder_weight_ = params_.declare("cls.predictions.decoder.weight", {V, H}, loom::ParameterInit::normal,
                                      true, "bert.embeddings.word_embeddings.weight");
    nsp_weight_ = params_.weight("cls.seq_relationship.weight", 2, H);
    nsp_bias_ = params_.bias("cls.seq_relationship.bias", 2);
  }

  Saved s_;
  int64_t batch_ = 0, masked_ = 0;
  /// Classes in the decoder GEMMs' aligned part: V less V mod the backend's GEMM extent multiple,
  /// or V where the backend wants none (GemmExtentAlignment not offered, or 1 for compute_).
  int64_t aligned_vocab_ = 0;
  size_t decoder_bias_ = 0, transform_weight_ = 0, transform_bias_ = 0, ln_gamma_ = 0, ln_beta_ = 0,
         decoder_weight_ = 0, nsp_weight_ = 0, nsp_bias_ = 0;
};

}  // namespace

loom_component_desc pretraining_heads_component() {
  return loom::component<loom::Block, PretrainingHeads>(
      "bert.pretraining-heads", "0.1.0",
      "pooler + NSP, MLM on labelled rows with the decoder tied to word embeddings",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_bert
