// block/bert.span-head, block/roberta.span-head: SQuAD-style span extraction (Hugging Face
// BertForQuestionAnswering, RobertaForQuestionAnswering: the same Linear on the encoder output).
//
//   logits = h·Wqaᵀ + bqa                   (B, T, 2) → start_logits, end_logits (B, T)
//   loss   = (CE_mean(start_logits, start_positions) + CE_mean(end_logits, end_positions)) / 2
// Positions are in [0, T]; T means "ignored" (Hugging Face clamps to T and ignores it). No dropout
// (NVIDIA's SQuAD head has none). Parameters: qa_outputs.weight [2, H], qa_outputs.bias [2].
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

template <const Family& kFamily>
class SpanHead final : public BertBlock, public loom::ModelArchitecture {
 public:
  const char* architecture() const override { return kFamily.span_architecture; }
  explicit SpanHead(loom::ComponentContext&) : BertBlock(kFamily, "span-head") {}

  loom::BlockRole role() const override { return loom::BlockRole::head; }
  const char* scope() const override { return ""; }
  /// In 16-bit compute backward reads the saved 16-bit copy of the input, not the f32 input.
  bool backward_reads_input() const override { return !reduced(); }

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
    input_ = input.reshape({B * T, H});
    linear_forward(to_compute(input_, s_.input_c), weight_, master(bias_), s_.logits);
    loom_blocks::SpanLoss(be()).forward(batch, s_.logits, s_.start, s_.end, s_.start_loss, s_.end_loss, output);
  }

  void backward(const loom::StepArgs& step, const Tensor&, const Tensor& d_input) override {
    const loom::BatchView& batch = *step.batch;
    const int64_t B = batch.batch, T = batch.seq, H = config_.hidden_size;
    RegionCarver region(step.scratch, step.scratch_bytes, be().device(), name_.c_str());
    const Scratch w = carve_scratch(region, B, T);
    if (!loom_blocks::SpanLoss::has_spans(batch)) {
      be().zero(d_input);
      return;
    }
    loom_blocks::SpanLoss(be()).backward(batch, s_.start, s_.end, step.loss_scale, w.loss, w.d_start, w.d_end,
                                         w.d_logits);
    const Tensor input_c = reduced() ? s_.input_c : input_;
    linear_backward(w.d_logits, to_compute(w.d_logits, w.d_logits_c), input_c, weight_, grad(bias_),
                    d_input.reshape({B * T, H}), 0.0f);
  }

  size_t output_count() const override { return 2; }
  loom::BlockOutput output(size_t index) const override {
    if (index == 0) return {"start_logits", s_.start};
    if (index == 1) return {"end_logits", s_.end};
    throw loom::Error(name_ + ": no output " + std::to_string(index));
  }

 private:
  struct Saved {
    Tensor input_c, logits, start, end, start_loss, end_loss;
  };
  struct Scratch {
    Tensor loss, d_start, d_end, d_logits, d_logits_c;
  };
  Saved carve_saved(RegionCarver& r, int64_t B, int64_t T) const {
    Saved s;
    s.input_c = r.take_compute_copy(compute_, {B * T, config_.hidden_size});
    s.logits = r.take(DType::f32, {B * T, 2});
    s.start = r.take(DType::f32, {B, T});
    s.end = r.take(DType::f32, {B, T});
    s.start_loss = r.take(DType::f32, {1});
    s.end_loss = r.take(DType::f32, {1});
    return s;
  }
  Scratch carve_scratch(RegionCarver& r, int64_t B, int64_t T) const {
    Scratch w;
    w.loss = r.take(DType::f32, {1});
    w.d_start = r.take(DType::f32, {B, T});
    w.d_end = r.take(DType::f32, {B, T});
    w.d_logits = r.take(DType::f32, {B * T, 2});
    w.d_logits_c = r.take_compute_copy(compute_, {B * T, 2});
    return w;
  }
  void declare_parameters() override {
    weight_ = params_.weight("qa_outputs.weight", 2, config_.hidden_size);
    bias_ = params_.bias("qa_outputs.bias", 2);
  }

  Saved s_;
  Tensor input_;
  size_t weight_ = 0, bias_ = 0;
};

}  // namespace

loom_component_desc span_head_component() {
  return loom::component<loom::Block, SpanHead<kBert>>(
      "bert.span-head", "0.1.0", "Linear(H, 2) → start/end logits; mean of both cross-entropies",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

loom_component_desc roberta_span_head_component() {
  return loom::component<loom::Block, SpanHead<kRoberta>>(
      "roberta.span-head", "0.1.0", "Linear(H, 2) → start/end logits; mean of both cross-entropies (RoBERTa)",
      loom::offers<loom::BackwardInput, loom::ModelArchitecture>{});
}

}  // namespace loom_bert
