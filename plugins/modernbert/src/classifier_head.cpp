// block/modernbert.classifier-head: sequence classification as Hugging Face's
// ModernBertForSequenceClassification computes it.
//
//   pooled = final_norm(h)[:, 0]                        (classifier_pooling "cls")
//          | Σ_t m[b, t]·final_norm(h)[b, t] / Σ_t m[b, t]  ("mean" over real tokens)
//   logits = dropout(head(pooled))·Wcᵀ + bc              (B, num_labels)
//   loss   = CE_mean(logits, labels), or Σ (logits − y)² / B when num_labels = 1 (regression)
// Mean pooling's weights m / Σm are the softmax of zero scores under the batch's key mask: the
// backend's own op gives them, a real token 1/count and a padding token exactly 0.
#include "components.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/head_losses.hpp"
#include "modern_head.hpp"

namespace loom_modernbert {
namespace {

using loom::DType;
using loom::Tensor;

class ClassifierHead final : public ModernHead {
 public:
  explicit ClassifierHead(loom::ComponentContext&) : ModernHead("block/modernbert.classifier-head") {}
  const char* architecture() const override { return "ModernBertForSequenceClassification"; }
  bool backward_reads_input() const override { return modern_.mean_pooling; }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch, shape.seq);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    carve_scratch(scratch, shape.batch, shape.seq);
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const Tensor& input, const Tensor& output) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    s_ = carve_saved(region, B, T);
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, B, T);
    input_ = input.reshape({B * T, H});
    if (modern_.mean_pooling) {
      final_norm_forward(input_, s_.final_norm, w.spare);
      be().zero(w.zero_scores);
      be().softmax_forward(w.zero_scores, batch.attention_bias, 1.0f, s_.weights);
      be().gemm(s_.weights.reshape({B, 1, T}), false, s_.final_norm.out.reshape({B, T, H}), false, s_.pooled.reshape({B, 1, H}), 1.0f,
                0.0f);
    } else {
      be().copy(input.select(1, 0), s_.cls);
      final_norm_forward(s_.cls, s_.final_norm, w.spare);
      be().copy(s_.final_norm.out, s_.pooled);
    }
    prediction_forward(s_.pooled, s_.prediction, w.spare);
    dropout_forward(step, s_.prediction.z, s_.dropped, modern_.classifier_dropout, 0);
    linear_forward(to_compute(s_.dropped, s_.dropped_c), classifier_weight_, master(classifier_bias_), s_.logits);
    loss().forward(batch, s_.logits, s_.diff, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size;
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, B, T);
    be().zero(d_input);
    if (!batch.labels.defined()) return;
    loss().backward(batch, s_.logits, s_.diff, step.loss_scale, w.loss, w.d_logits);
    linear_backward(w.d_logits, to_compute(w.d_logits, w.d_logits_c), reduced() ? s_.dropped_c : s_.dropped,
                    classifier_weight_, grad(classifier_bias_), w.rows.b, 0.0f);
    dropout_backward(step, w.rows.b, w.rows.b, modern_.classifier_dropout, 0);
    prediction_backward(w.rows.b, s_.pooled, s_.prediction, w.rows, w.rows.b, w.spare);
    if (modern_.mean_pooling) {  // d final_norm(h)[b, t] = weight[b, t]·d pooled[b]
      be().gemm(s_.weights.reshape({B, 1, T}), true, w.rows.b.reshape({B, 1, H}), false, w.d_normed.reshape({B, T, H}), 1.0f, 0.0f);
      final_norm_backward(w.d_normed, input_, s_.final_norm, d_input.reshape({B * T, H}), w.spare);
    } else {
      final_norm_backward(w.rows.b, s_.cls, s_.final_norm, w.rows.a, w.spare);
      be().copy(w.rows.a, d_input.select(1, 0));
    }
  }

  size_t output_count() const override { return 1; }
  loom::BlockOutput output(size_t index) const override {
    if (index == 0) return {"logits", s_.logits};
    throw loom::Error(name_ + ": no output " + std::to_string(index));
  }

 private:
  loom_blocks::ClassificationLoss loss() const { return {be(), name_, config_.num_labels}; }
  bool regression() const { return loss().regression(); }

  struct Saved {
    Tensor cls, weights, pooled, dropped, dropped_c, logits, diff;
    FinalNormSaved final_norm;
    PredictionSaved prediction;
  };
  struct Scratch {
    Tensor spare, zero_scores, loss, d_logits, d_logits_c, d_normed;
    RowScratch rows;
  };
  Saved carve_saved(RegionCarver& r, int64_t B, int64_t T) const {
    const int64_t H = config_.hidden_size;
    Saved s;
    if (modern_.mean_pooling) {
      s.final_norm = carve_final_norm(r, B * T);
      s.weights = r.take(DType::f32, {B, 1, 1, T});  // softmax's [B, heads, Tq, Tk]
    } else {
      s.cls = r.take(DType::f32, {B, H});
      s.final_norm = carve_final_norm(r, B);
    }
    s.pooled = r.take(DType::f32, {B, H});
    s.prediction = carve_prediction(r, B);
    s.dropped = r.take(DType::f32, {B, H});
    s.dropped_c = r.take_compute_copy(compute_, {B, H});
    s.logits = r.take(DType::f32, {B, config_.num_labels});
    if (regression()) s.diff = r.take(DType::f32, {B, 1});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B, int64_t T) const {
    Scratch w;
    w.spare = norm_scratch(r);
    w.loss = r.take(DType::f32, {1});
    w.d_logits = r.take(DType::f32, {B, config_.num_labels});
    w.d_logits_c = r.take_compute_copy(compute_, {B, config_.num_labels});
    w.rows = carve_rows(r, B);
    if (modern_.mean_pooling) {
      w.zero_scores = r.take(DType::f32, {B, 1, 1, T});
      w.d_normed = r.take(DType::f32, {B * T, config_.hidden_size});
    }
    return w;
  }
  void declare_parameters() override {
    loom_blocks::ClassificationLoss::check_num_labels(name_, config_.num_labels);
    declare_head();
    classifier_weight_ = params_.weight("classifier.weight", config_.num_labels, config_.hidden_size);
    classifier_bias_ = params_.bias("classifier.bias", config_.num_labels);
  }

  Saved s_;
  Tensor input_;
  size_t classifier_weight_ = 0, classifier_bias_ = 0;
};

}  // namespace

loom_component_desc classifier_head_component() {
  return loom::component<loom::Block, ClassifierHead>(
      "modernbert.classifier-head", "0.1.0",
      "final norm, cls or mean pooling, prediction head, dropout, Linear(H, num_labels) (ModernBERT)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_modernbert
