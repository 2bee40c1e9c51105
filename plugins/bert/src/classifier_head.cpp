// block/bert.classifier-head: sequence classification (Hugging Face BertForSequenceClassification).
//
//   logits = dropout(pooled)·Wcᵀ + bc      (B, num_labels)   pooled = tanh([CLS]·Wpᵀ + bp)
//   loss   = CE_mean(logits, labels)       (0 when the batch has no labels)
// num_labels = 1 is regression, as Hugging Face's problem_type "regression": the labels are f32
// targets and loss = mean over rows of (logit − target)² (MSELoss). Parameters either way:
// bert.pooler.dense.*, classifier.weight [num_labels, H], classifier.bias. The dropout
// probability is the config's classifier_dropout (hidden_dropout_prob when the file says null).
#include "components.hpp"
#include "loom/sdk/model_architecture.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/head_losses.hpp"
#include "pooler.hpp"

namespace loom_bert {
namespace {

using loom::DType;
using loom::Tensor;

class ClassifierHead final : public PoolerHead, public loom::ModelArchitecture {
 public:
  const char* architecture() const override { return "BertForSequenceClassification"; }
  explicit ClassifierHead(loom::ComponentContext&) : PoolerHead(kBert, "classifier-head") {}

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
    pooler_forward(input, s_.pooler);
    dropout_forward(step, s_.pooler.pooled, s_.dropped, config_.classifier_dropout, 0);
    linear_forward(to_compute(s_.dropped, s_.dropped_c), classifier_weight_, master(classifier_bias_),
                   s_.logits);
    loss().forward(batch, s_.logits, s_.diff, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    RegionCarver region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(region, batch.batch);
    be().zero(d_input);
    if (!batch.labels.defined()) return;
    loss().backward(batch, s_.logits, s_.diff, step.loss_scale, w.loss, w.d_logits);
    const Tensor dropped_c = reduced() ? s_.dropped_c : s_.dropped;
    linear_backward(w.d_logits, to_compute(w.d_logits, w.d_logits_c), dropped_c, classifier_weight_,
                    grad(classifier_bias_), w.d_pooled, 0.0f);
    dropout_backward(step, w.d_pooled, w.d_pooled, config_.classifier_dropout, 0);
    pooler_backward(w.d_pooled, w.d_pooled_c, s_.pooler, d_input);
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
    PoolerSaved pooler;
    Tensor dropped, dropped_c, logits, diff;  // diff: regression only, logits − targets
  };
  struct Scratch {
    Tensor loss, d_logits, d_logits_c, d_pooled, d_pooled_c;
  };
  Saved carve_saved(RegionCarver& r, int64_t B) const {
    Saved s;
    s.pooler = carve_pooler(r, B);
    s.dropped = r.take(DType::f32, {B, config_.hidden_size});
    s.dropped_c = r.take_compute_copy(compute_, {B, config_.hidden_size});
    s.logits = r.take(DType::f32, {B, config_.num_labels});
    if (regression()) s.diff = r.take(DType::f32, {B, 1});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B) const {
    Scratch w;
    w.loss = r.take(DType::f32, {1});
    w.d_logits = r.take(DType::f32, {B, config_.num_labels});
    w.d_logits_c = r.take_compute_copy(compute_, {B, config_.num_labels});
    w.d_pooled = r.take(DType::f32, {B, config_.hidden_size});
    w.d_pooled_c = r.take_compute_copy(compute_, {B, config_.hidden_size});
    return w;
  }
  void declare_parameters() override {
    loom_blocks::ClassificationLoss::check_num_labels(name_, config_.num_labels);
    declare_pooler();
    classifier_weight_ = params_.weight("classifier.weight", config_.num_labels, config_.hidden_size);
    classifier_bias_ = params_.bias("classifier.bias", config_.num_labels);
  }

  Saved s_;
  size_t classifier_weight_ = 0, classifier_bias_ = 0;
};

}  // namespace

loom_component_desc classifier_head_component() {
  return loom::component<loom::Block, ClassifierHead>(
      "bert.classifier-head", "0.1.0",
      "pooler, dropout, Linear(H, num_labels); cross-entropy (num_labels = 1: MSE regression)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_bert
