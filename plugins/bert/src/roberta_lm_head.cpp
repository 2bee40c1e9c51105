// block/roberta.pretraining-heads: RoBERTa's masked-LM objective (Hugging Face RobertaForMaskedLM's
// lm_head), on the labelled positions only; RoBERTa has no pooler and no next-sentence task.
//
//   rows   = h[masked_rows]                                         (M, H)
//   z      = layer_norm(gelu(rows·Wdᵀ + bd))                         (M, H)  lm_head.dense, .layer_norm
//   logits = z·Eᵀ + bias,  E = word embeddings (tied)                (M, V) in rows of stride Vp
//   loss   = CE_mean(logits, masked_labels)
// The GELU is the erf form whatever hidden_act says: Hugging Face's RobertaLMHead calls gelu()
// itself, where BERT's transform takes hidden_act. `lm_head.decoder.weight` is the word embeddings
// and `lm_head.decoder.bias` is `lm_head.bias` (both tied, as in Hugging Face, so a file holding
// either copy loads and a saved file holds neither, as save_pretrained writes it).
// Outputs as BERT's pre-training heads name them (mlm_loss, masked_prediction_logits,
// masked_prediction_correct), so the host's logging and `loom debug-step` read them alike.
#include "bert_block.hpp"
#include "components.hpp"
#include "loom/sdk/model_architecture.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/region_carver.hpp"
#include "loom_blocks/vocabulary_decoder.hpp"

namespace loom_bert {
namespace {

using loom::DType;
using loom::Tensor;

class RobertaLmHead final : public BertBlock, public loom::ModelArchitecture {
 public:
  explicit RobertaLmHead(loom::ComponentContext&) : BertBlock(kRoberta, "pretraining-heads") {}
  const char* architecture() const override { return "RobertaForMaskedLM"; }

  loom::BlockRole role() const override { return loom::BlockRole::head; }
  const char* scope() const override { return ""; }
  /// Backward reads the labelled rows from what forward saved.
  bool backward_reads_input() const override { return false; }

  void setup(const loom::BlockSetup& setup) override {
    BertBlock::setup(setup);
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
    if (M == 0) {
      be().zero(s_.loss);
      be().copy(s_.loss, output);
      return;
    }
    be().embedding_gather(input.reshape({B * T, H}), batch.masked_rows, s_.rows, false);
    linear_forward(to_compute(s_.rows, s_.rows_c), dense_weight_, Tensor{}, s_.dense);
    be().bias_gelu_forward(s_.dense, master(dense_bias_), s_.activated, loom::Gelu::erf);
    be().layernorm_forward(s_.activated, master(ln_gamma_), master(ln_beta_), config_.layer_norm_eps, s_.z, s_.mean,
                           s_.rstd);
    decoder_.forward(be(), to_compute(s_.z, s_.z_c), compute(decoder_weight_), master(bias_), linear_bias_,
                     s_.logits);
    be().cross_entropy(s_.logits, batch.masked_labels, config_.vocab_size, loom::kIgnoreIndex, 1.0f, s_.loss, {},
                       {}, s_.correct);
    be().copy(s_.loss, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size, M = batch.num_masked;
    RegionCarver region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(region, M);
    be().zero(d_input);
    if (M == 0) return;
    // Softmax − onehot, in place over the logits (the loss recomputed into a scratch scalar).
    be().cross_entropy(s_.logits, batch.masked_labels, config_.vocab_size, loom::kIgnoreIndex, step.loss_scale,
                       w.loss, s_.logits, {}, {});
    decoder_.backward(be(), s_.logits, w.d_logits_c, w.ones, reduced() ? s_.z_c : s_.z, compute(decoder_weight_),
                      grad(decoder_weight_), grad(bias_), w.d_rows_a);
    be().layernorm_backward(w.d_rows_a, s_.activated, master(ln_gamma_), s_.mean, s_.rstd, w.d_rows_b,
                            grad(ln_gamma_), grad(ln_beta_), false);
    be().bias_gelu_backward(w.d_rows_b, s_.dense, master(dense_bias_), w.d_rows_b, grad(dense_bias_),
                            loom::Gelu::erf);
    linear_backward(w.d_rows_b, to_compute(w.d_rows_b, w.d_rows_c), reduced() ? s_.rows_c : s_.rows,
                    dense_weight_, Tensor{}, w.d_rows_a, 0.0f);
    be().embedding_scatter_add(w.d_rows_a, batch.masked_rows, d_input.reshape({B * T, H}));
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
    Tensor loss, rows, rows_c, dense, activated, mean, rstd, z, z_c, logits, correct;
  };
  struct Scratch {
    Tensor loss, ones, d_logits_c, d_rows_a, d_rows_b, d_rows_c;
  };
  Saved carve_saved(RegionCarver& r, int64_t M) const {
    const int64_t H = config_.hidden_size;
    Saved s;
    s.loss = r.take(DType::f32, {1});
    if (M == 0) return s;
    s.rows = r.take(DType::f32, {M, H});
    s.rows_c = r.take_compute_copy(compute_, {M, H});
    s.dense = r.take(compute_, {M, H});
    s.activated = r.take(DType::f32, {M, H});
    s.mean = r.take(DType::f32, {M});
    s.rstd = r.take(DType::f32, {M});
    s.z = r.take(DType::f32, {M, H});
    s.z_c = r.take_compute_copy(compute_, {M, H});
    s.logits = r.take(DType::f32, {M, loom::padded_vocab_size(config_)});
    s.correct = r.take(DType::i32, {M});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t M) const {
    const int64_t H = config_.hidden_size;
    Scratch w;
    w.loss = r.take(DType::f32, {1});
    if (M == 0) return w;
    w.ones = r.take(DType::f32, {1, M});
    w.d_logits_c = r.take_compute_copy(compute_, {M, loom::padded_vocab_size(config_)});
    w.d_rows_a = r.take(DType::f32, {M, H});
    w.d_rows_b = r.take(DType::f32, {M, H});
    w.d_rows_c = r.take_compute_copy(compute_, {M, H});
    return w;
  }

  void declare_parameters() override {
    const int64_t H = config_.hidden_size, V = config_.vocab_size;
    dense_weight_ = params_.weight("lm_head.dense.weight", H, H);
    dense_bias_ = params_.bias("lm_head.dense.bias", H);
    ln_gamma_ = params_.gamma("lm_head.layer_norm.weight", H);
    ln_beta_ = params_.bias("lm_head.layer_norm.bias", H);
    bias_ = params_.bias("lm_head.bias", V);
    decoder_weight_ =
        params_.declare("lm_head.decoder.weight", {V, H}, loom::ParameterInit::normal, true, kRoberta.word_embeddings);
    params_.declare("lm_head.decoder.bias", {V}, loom::ParameterInit::zeros, false, "lm_head.bias");
  }

  Saved s_;
  int64_t masked_ = 0;
  loom_blocks::VocabularyDecoder decoder_;
  size_t dense_weight_ = 0, dense_bias_ = 0, ln_gamma_ = 0, ln_beta_ = 0, bias_ = 0, decoder_weight_ = 0;
};

}  // namespace

loom_component_desc roberta_lm_head_component() {
  return loom::component<loom::Block, RobertaLmHead>(
      "roberta.pretraining-heads", "0.1.0",
      "MLM head on labelled rows, decoder tied to the word embeddings; no NSP (RoBERTa)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_bert
