// block/modernbert.span-head: extractive question answering as Hugging Face's
// ModernBertForQuestionAnswering computes it.
//
//   z      = dropout(head(final_norm(h)))       (B·T, H), every position
//   logits = z·Wcᵀ + bc                          (B·T, 2) → start, end (B, T)
//   loss   = (CE(start, start_positions) + CE(end, end_positions)) / 2, position T = ignored
#include "components.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_blocks/head_losses.hpp"
#include "modern_head.hpp"

namespace loom_modernbert {
namespace {

using loom::DType;
using loom::Tensor;

class SpanHead final : public ModernHead {
 public:
  explicit SpanHead(loom::ComponentContext&) : ModernHead("block/modernbert.span-head") {}
  const char* architecture() const override { return "ModernBertForQuestionAnswering"; }
  bool backward_reads_input() const override { return true; }

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
    final_norm_forward(input_, s_.final_norm, w.spare);
    prediction_forward(s_.final_norm.out, s_.prediction, w.spare);
    dropout_forward(step, s_.prediction.z, s_.dropped, modern_.classifier_dropout, 0);
    linear_forward(to_compute(s_.dropped, s_.dropped_c), weight_, master(bias_), s_.logits);
    loom_blocks::SpanLoss(be()).forward(batch, s_.logits, s_.start, s_.end, s_.start_loss, s_.end_loss, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size;
    RegionCarver scratch(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(scratch, B, T);
    if (!loom_blocks::SpanLoss::has_spans(batch)) {
      be().zero(d_input);
      return;
    }
    loom_blocks::SpanLoss(be()).backward(batch, s_.start, s_.end, step.loss_scale, w.loss, w.d_start, w.d_end,
                                         w.d_logits);
    linear_backward(w.d_logits, to_compute(w.d_logits, w.d_logits_c), reduced() ? s_.dropped_c : s_.dropped, weight_,
                    grad(bias_), w.rows.b, 0.0f);
    dropout_backward(step, w.rows.b, w.rows.b, modern_.classifier_dropout, 0);
    prediction_backward(w.rows.b, s_.final_norm.out, s_.prediction, w.rows, w.rows.b, w.spare);
    final_norm_backward(w.rows.b, input_, s_.final_norm, d_input.reshape({B * T, H}), w.spare);
  }

  size_t output_count() const override { return 2; }
  loom::BlockOutput output(size_t index) const override {
    if (index == 0) return {"start_logits", s_.start};
    if (index == 1) return {"end_logits", s_.end};
    throw loom::Error(name_ + ": no output " + std::to_string(index));
  }

 private:
  struct Saved {
    Tensor dropped, dropped_c, logits, start, end, start_loss, end_loss;
    FinalNormSaved final_norm;
    PredictionSaved prediction;
  };
  struct Scratch {
    Tensor spare, loss, d_start, d_end, d_logits, d_logits_c;
    RowScratch rows;
  };
  Saved carve_saved(RegionCarver& r, int64_t B, int64_t T) const {
    const int64_t N = B * T;
    Saved s;
    s.final_norm = carve_final_norm(r, N);
    s.prediction = carve_prediction(r, N);
    s.dropped = r.take(DType::f32, {N, config_.hidden_size});
    s.dropped_c = r.take_compute_copy(compute_, {N, config_.hidden_size});
    s.logits = r.take(DType::f32, {N, 2});
    s.start = r.take(DType::f32, {B, T});
    s.end = r.take(DType::f32, {B, T});
    s.start_loss = r.take(DType::f32, {1});
    s.end_loss = r.take(DType::f32, {1});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B, int64_t T) const {
    Scratch w;
    w.spare = norm_scratch(r);
    w.loss = r.take(DType::f32, {1});
    w.d_start = r.take(DType::f32, {B, T});
    w.d_end = r.take(DType::f32, {B, T});
    w.d_logits = r.take(DType::f32, {B * T, 2});
    w.d_logits_c = r.take_compute_copy(compute_, {B * T, 2});
    w.rows = carve_rows(r, B * T);
    return w;
  }
  void declare_parameters() override {
    declare_head();
    weight_ = params_.weight("classifier.weight", 2, config_.hidden_size);
    bias_ = params_.bias("classifier.bias", 2);
  }

  Saved s_;
  Tensor input_;
  size_t weight_ = 0, bias_ = 0;
};

}  // namespace

loom_component_desc span_head_component() {
  return loom::component<loom::Block, SpanHead>(
      "modernbert.span-head", "0.1.0",
      "final norm, prediction head, dropout, Linear(H, 2) → start and end logits (ModernBERT)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_modernbert
