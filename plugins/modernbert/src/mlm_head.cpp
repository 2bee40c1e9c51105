// block/modernbert.pretraining-heads: ModernBERT's masked-LM objective (no next-sentence task), as
// Hugging Face's ModernBertForMaskedLM computes it with sparse prediction, on the labelled rows only.
//
//   rows   = h[masked_rows]                               (M, H)
//   z      = head.norm(gelu(final_norm(rows)·Wdᵀ (+ bd)))  (M, H)
//   logits = z·Eᵀ (+ decoder.bias),  E = token embeddings (tied)   (M, V) in rows of stride Vp
//   loss   = CE_mean(logits, masked_labels)
// Outputs as BERT's pre-training heads name them (mlm_loss, masked_prediction_logits,
// masked_prediction_correct), so the host's logging and `loom debug-step` read them alike.
#include "components.hpp"
#include "loom/sdk/plugin.hpp"
#include "modern_head.hpp"
#include "loom_blocks/vocabulary_decoder.hpp"

namespace loom_modernbert {
namespace {

using loom::DType;
using loom::Tensor;

class MaskedLmHead final : public ModernHead {
 public:
  explicit MaskedLmHead(loom::ComponentContext&) : ModernHead("block/modernbert.pretraining-heads") {}
  const char* architecture() const override { return "ModernBertForMaskedLM"; }
  bool backward_reads_input() const override { return false; }

  void setup(const loom::BlockSetup& setup) override {
    ModernHead::setup(setup);
    decoder_.setup(setup, config_.vocab_size);
  }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.max_masked);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    carve_scratch(scratch, shape.max_masked);
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const Tensor& input, const Tensor& output) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size, M = batch.num_masked;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    s_ = carve_saved(region, M);
    masked_ = M;
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, M);
    if (M == 0) {
      be().zero(s_.loss);
      be().copy(s_.loss, output);
      return;
    }
    be().embedding_gather(input.reshape({B * T, H}), batch.masked_rows, s_.rows, false);
    final_norm_forward(s_.rows, s_.final_norm, w.spare);
    const Tensor z_c = prediction_forward(s_.final_norm.out, s_.prediction, w.spare);
    decoder_.forward(be(), z_c, compute(decoder_weight_), decoder_bias_ ? master(*decoder_bias_) : Tensor{},
                     linear_bias_, s_.logits);
    be().cross_entropy(s_.logits, batch.masked_labels, config_.vocab_size, loom::kIgnoreIndex, 1.0f, s_.loss, {},
                       {}, s_.correct);
    be().copy(s_.loss, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size, M = batch.num_masked;
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, M);
    be().zero(d_input);
    if (M == 0) return;
    // Softmax − onehot, in place over the logits (the loss recomputed into a scratch scalar).
    be().cross_entropy(s_.logits, batch.masked_labels, config_.vocab_size, loom::kIgnoreIndex, step.loss_scale,
                       w.loss, s_.logits, {}, {});
    decoder_.backward(be(), s_.logits, w.d_logits_c, w.ones, reduced() ? s_.prediction.z_c : s_.prediction.z,
                      compute(decoder_weight_), grad(decoder_weight_),
                      decoder_bias_ ? grad(*decoder_bias_) : Tensor{}, w.rows.b);
    prediction_backward(w.rows.b, s_.final_norm.out, s_.prediction, w.rows, w.rows.b, w.spare);
    final_norm_backward(w.rows.b, s_.rows, s_.final_norm, w.d_rows, w.spare);
    be().embedding_scatter_add(w.d_rows, batch.masked_rows, d_input.reshape({B * T, H}));
  }

  size_t output_count() const override { return 3; }
  loom::BlockOutput output(size_t index) const override {
    switch (index) {
      case 0:
        return {"mlm_loss", s_.loss};
      case 1:
        return {"masked_prediction_logits", masked_ > 0 ? decoder_.class_columns(s_.logits) : Tensor{}};
      case 2:  // i32 [M]: 1 where the first arg-max of the row's logits is its label
        return {"masked_prediction_correct", masked_ > 0 ? s_.correct : Tensor{}};
    }
    throw loom::Error(name_ + ": no output " + std::to_string(index));
  }

 private:
  struct Saved {
    Tensor loss, rows, logits, correct;
    FinalNormSaved final_norm;
    PredictionSaved prediction;
  };
  struct Scratch {
    Tensor spare, loss, ones, d_logits_c, d_rows;
    RowScratch rows;
  };
  Saved carve_saved(RegionCarver& r, int64_t M) const {
    Saved s;
    s.loss = r.take(DType::f32, {1});
    if (M == 0) return s;
    s.rows = r.take(DType::f32, {M, config_.hidden_size});
    s.final_norm = carve_final_norm(r, M);
    s.prediction = carve_prediction(r, M);
    s.logits = r.take(DType::f32, {M, loom::padded_vocab_size(config_)});
    s.correct = r.take(DType::i32, {M});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t M) const {
    Scratch w;
    w.spare = norm_scratch(r);
    w.loss = r.take(DType::f32, {1});
    if (M == 0) return w;
    w.ones = r.take(DType::f32, {1, M});
    w.d_logits_c = r.take_compute_copy(compute_, {M, loom::padded_vocab_size(config_)});
    w.d_rows = r.take(DType::f32, {M, config_.hidden_size});
    w.rows = carve_rows(r, M);
    return w;
  }

  void declare_parameters() override {
    declare_head();
    decoder_weight_ = params_.declare("decoder.weight", {config_.vocab_size, config_.hidden_size},
                                      loom::ParameterInit::normal, true, "model.embeddings.tok_embeddings.weight");
    if (modern_.decoder_bias) decoder_bias_ = params_.bias("decoder.bias", config_.vocab_size);
  }

  Saved s_;
  int64_t masked_ = 0;
  loom_blocks::VocabularyDecoder decoder_;
  size_t decoder_weight_ = 0;
  std::optional<size_t> decoder_bias_;
};

}  // namespace

loom_component_desc pretraining_heads_component() {
  return loom::component<loom::Block, MaskedLmHead>(
      "modernbert.pretraining-heads", "0.1.0",
      "final norm, prediction head, MLM decoder tied to the token embeddings, on labelled rows (ModernBERT)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_modernbert
