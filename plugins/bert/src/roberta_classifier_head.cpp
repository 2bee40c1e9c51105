// block/roberta.classifier-head: sequence classification (Hugging Face RobertaForSequenceClassification,
// whose RobertaClassificationHead replaces BERT's pooler; the encoder has no pooler).
//
//   x      = dropout(h[:, 0, :])                   (B, H)   the first token, <s>
//   pooled = dropout(tanh(x·Wdᵀ + bd))             (B, H)   classifier.dense
//   logits = pooled·Woᵀ + bo                       (B, num_labels)   classifier.out_proj
//   loss   = CE_mean(logits, labels)               (0 when the batch has no labels)
// num_labels = 1 is regression (MSE), as BERT's classifier head and Hugging Face's problem_type
// "regression". Both dropouts have the config's classifier_dropout (hidden_dropout_prob when the
// file says null); sites 0 and 1.
#include "bert_block.hpp"
#include "components.hpp"
#include "loom/sdk/model_architecture.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/head_losses.hpp"
#include "loom_blocks/region_carver.hpp"

namespace loom_bert {
namespace {

using loom::DType;
using loom::Tensor;

class RobertaClassifierHead final : public BertBlock, public loom::ModelArchitecture {
 public:
  explicit RobertaClassifierHead(loom::ComponentContext&) : BertBlock(kRoberta, "classifier-head") {}
  const char* architecture() const override { return "RobertaForSequenceClassification"; }

  loom::BlockRole role() const override { return loom::BlockRole::head; }
  const char* scope() const override { return ""; }
  /// Backward reads the first rows from what forward saved.
  bool backward_reads_input() const override { return false; }

  loom::ActivationBytes activation_bytes(const loom::ActivationShape& shape) const override {
    RegionCarver saved(nullptr, 0, {}, name_.c_str());
    carve_saved(saved, shape.batch);
    RegionCarver scratch(nullptr, 0, {}, name_.c_str());
    carve_scratch(scratch, shape.batch);
    return {saved.used(), scratch.used()};
  }

  void forward(const loom::StepArgs& step, const Tensor& input, const Tensor& output) override {
    const loom::BatchView& batch = *step.batch;
    RegionCarver region(step.saved, step.saved_bytes, be().device(), name_.c_str());
    s_ = carve_saved(region, batch.batch);
    const float p = config_.classifier_dropout;
    be().copy(input.select(1, 0), s_.x);
    dropout_forward(step, s_.x, s_.x, p, 0);
    linear_forward(to_compute(s_.x, s_.x_c), dense_weight_, master(dense_bias_), s_.pooled);
    be().tanh_forward(s_.pooled, s_.pooled);
    dropout_forward(step, s_.pooled, s_.dropped, p, 1);
    linear_forward(to_compute(s_.dropped, s_.dropped_c), out_weight_, master(out_bias_), s_.logits);
    loss().forward(batch, s_.logits, s_.diff, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    RegionCarver region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(region, batch.batch);
    be().zero(d_input);
    if (!batch.labels.defined()) return;
    const float p = config_.classifier_dropout;
    loss().backward(batch, s_.logits, s_.diff, step.loss_scale, w.loss, w.d_logits);
    linear_backward(w.d_logits, to_compute(w.d_logits, w.d_logits_c), reduced() ? s_.dropped_c : s_.dropped,
                    out_weight_, grad(out_bias_), w.d_pooled, 0.0f);
    dropout_backward(step, w.d_pooled, w.d_pooled, p, 1);
    be().tanh_backward(w.d_pooled, s_.pooled, w.d_pooled);
    linear_backward(w.d_pooled, to_compute(w.d_pooled, w.d_pooled_c), reduced() ? s_.x_c : s_.x, dense_weight_,
                    grad(dense_bias_), w.d_x, 0.0f);
    dropout_backward(step, w.d_x, w.d_x, p, 0);
    be().copy(w.d_x, d_input.select(1, 0));
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
    Tensor x, x_c, pooled, dropped, dropped_c, logits, diff;  // diff: regression only, logits − targets
  };
  struct Scratch {
    Tensor loss, d_logits, d_logits_c, d_pooled, d_pooled_c, d_x;
  };
  Saved carve_saved(RegionCarver& r, int64_t B) const {
    const int64_t H = config_.hidden_size;
    Saved s;
    s.x = r.take(DType::f32, {B, H});
    s.x_c = r.take_compute_copy(compute_, {B, H});
    s.pooled = r.take(DType::f32, {B, H});
    s.dropped = r.take(DType::f32, {B, H});
    s.dropped_c = r.take_compute_copy(compute_, {B, H});
    s.logits = r.take(DType::f32, {B, config_.num_labels});
    if (regression()) s.diff = r.take(DType::f32, {B, 1});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B) const {
    const int64_t H = config_.hidden_size;
    Scratch w;
    w.loss = r.take(DType::f32, {1});
    w.d_logits = r.take(DType::f32, {B, config_.num_labels});
    w.d_logits_c = r.take_compute_copy(compute_, {B, config_.num_labels});
    w.d_pooled = r.take(DType::f32, {B, H});
    w.d_pooled_c = r.take_compute_copy(compute_, {B, H});
    w.d_x = r.take(DType::f32, {B, H});
    return w;
  }
  void declare_parameters() override {
    const int64_t H = config_.hidden_size;
    loom_blocks::ClassificationLoss::check_num_labels(name_, config_.num_labels);
    dense_weight_ = params_.weight("classifier.dense.weight", H, H);
    dense_bias_ = params_.bias("classifier.dense.bias", H);
    out_weight_ = params_.weight("classifier.out_proj.weight", config_.num_labels, H);
    out_bias_ = params_.bias("classifier.out_proj.bias", config_.num_labels);
  }

  Saved s_;
  size_t dense_weight_ = 0, dense_bias_ = 0, out_weight_ = 0, out_bias_ = 0;
};

}  // namespace

loom_component_desc roberta_classifier_head_component() {
  return loom::component<loom::Block, RobertaClassifierHead>(
      "roberta.classifier-head", "0.1.0",
      "first token, dropout, dense + tanh, dropout, out_proj; cross-entropy (num_labels = 1: MSE regression)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_bert
