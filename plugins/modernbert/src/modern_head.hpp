// ModernHead: what ModernBERT's heads share — the encoder's final norm (`model.final_norm`, part of
// ModernBertModel in Hugging Face, applied here by the head so the model is embeddings, layers,
// head like every family's) and the prediction head (`head.dense` → GELU → `head.norm`) every task
// head starts with. Both act row by row, so a head runs them on the rows it needs only (the MLM
// head on the labelled positions).
#pragma once

#include <optional>

#include "loom/sdk/model_architecture.hpp"
#include "modern_block.hpp"

namespace loom_modernbert {

class ModernHead : public ModernBlock, public loom::ModelArchitecture {
 public:
  loom::BlockRole role() const override { return loom::BlockRole::head; }
  const char* scope() const override { return ""; }

 protected:
  using ModernBlock::ModernBlock;

  /// The final norm of R rows: x (f32, saved by the caller), its output and statistics.
  struct FinalNormSaved {
    loom::Tensor out, mean, rstd;
  };
  FinalNormSaved carve_final_norm(RegionCarver& r, int64_t rows) const {
    return {r.take(loom::DType::f32, {rows, config_.hidden_size}), r.take(loom::DType::f32, {rows}),
            r.take(loom::DType::f32, {rows})};
  }
  /// The prediction head of R rows.
  struct PredictionSaved {
    loom::Tensor x_c, dense, activated, mean, rstd, z, z_c;
  };
  PredictionSaved carve_prediction(RegionCarver& r, int64_t rows) const {
    const int64_t H = config_.hidden_size;
    PredictionSaved s;
    s.x_c = r.take_compute_copy(compute_, {rows, H});
    s.dense = r.take(loom::DType::f32, {rows, H});
    s.activated = r.take(loom::DType::f32, {rows, H});
    s.mean = r.take(loom::DType::f32, {rows});
    s.rstd = r.take(loom::DType::f32, {rows});
    s.z = r.take(loom::DType::f32, {rows, H});
    s.z_c = r.take_compute_copy(compute_, {rows, H});
    return s;
  }
  /// Backward's scratch for R rows: two f32 [R, H] and a compute copy.
  struct RowScratch {
    loom::Tensor a, b, c;
  };
  RowScratch carve_rows(RegionCarver& r, int64_t rows) const {
    return {r.take(loom::DType::f32, {rows, config_.hidden_size}), r.take(loom::DType::f32, {rows, config_.hidden_size}),
            r.take_compute_copy(compute_, {rows, config_.hidden_size})};
  }

  void declare_head() {
    const int64_t H = config_.hidden_size;
    final_norm_ = declare_norm("model.final_norm.weight", "model.final_norm.bias");
    dense_weight_ = params_.weight("head.dense.weight", H, H);
    if (modern_.classifier_bias) dense_bias_ = params_.bias("head.dense.bias", H);
    head_norm_ = declare_norm("head.norm.weight", "head.norm.bias");
  }

  void final_norm_forward(const loom::Tensor& x, const FinalNormSaved& s, const loom::Tensor& spare) const {
    norm_forward(final_norm_, x, s.out, s.mean, s.rstd, spare);
  }
  /// d_x = final_norm'(dy) (OVERWRITE; dy is not changed).
  void final_norm_backward(const loom::Tensor& dy, const loom::Tensor& x, const FinalNormSaved& s,
                           const loom::Tensor& d_x, const loom::Tensor& spare) const {
    norm_backward(final_norm_, dy, x, s.mean, s.rstd, d_x, false, spare);
  }

  /// z = head.norm(gelu(x·Wᵀ (+ b))) for f32 rows x; returns z as a GEMM operand (compute dtype).
  loom::Tensor prediction_forward(const loom::Tensor& x, const PredictionSaved& s, const loom::Tensor& spare) const {
    linear_forward(to_compute(x, s.x_c), dense_weight_, dense_bias_ ? master(*dense_bias_) : loom::Tensor{}, s.dense);
    be().bias_gelu_forward(s.dense, loom::Tensor{}, s.activated, modern_.classifier_activation);
    norm_forward(head_norm_, s.activated, s.z, s.mean, s.rstd, spare);
    return to_compute(s.z, s.z_c);
  }
  /// d_x = prediction'(dz) (OVERWRITE), for the forward's rows `x`; `dz` and w.a are overwritten.
  void prediction_backward(const loom::Tensor& dz, const loom::Tensor& x, const PredictionSaved& s,
                           const RowScratch& w, const loom::Tensor& d_x, const loom::Tensor& spare) const {
    norm_backward(head_norm_, dz, s.activated, s.mean, s.rstd, w.a, false, spare);
    be().bias_gelu_backward(w.a, s.dense, loom::Tensor{}, w.a, loom::Tensor{}, modern_.classifier_activation);
    linear_backward(w.a, to_compute(w.a, w.c), reduced() ? s.x_c : x, dense_weight_,
                    dense_bias_ ? grad(*dense_bias_) : loom::Tensor{}, d_x, 0.0f);
  }

  Norm final_norm_, head_norm_;
  size_t dense_weight_ = 0;
  std::optional<size_t> dense_bias_;
};

}  // namespace loom_modernbert
