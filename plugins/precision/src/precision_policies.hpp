// The three precision policies (docs/decisions/loss-scaling.md):
// - precision/fp32: fp32 compute, the flat fp32 buffer is the model, no loss scaling;
// - precision/bf16-mixed: bf16 compute with fp32 master weights and fp32 gradients; bf16 has
//   fp32's exponent range, so no loss scaling;
// - precision/fp16-mixed: fp16 compute, fp32 master weights and gradients, dynamic loss scaling.
// Every policy skips a step whose gradients are not finite (the optimizer is not called, the
// schedule does not advance, `skipped_steps` grows). fp32 and bf16-mixed cannot cure overflow by
// rescaling, so after `max_consecutive_skips` skipped steps in a row they stop with a diagnosis;
// fp16-mixed stops when an overflow happens at its minimum loss scale. Every policy also decides
// from a flag in backend memory (loom::BackendPrecision), which the backend path of the trainer
// uses instead of any_nonfinite on host copies: the same decision, read with one 4-byte copy.
#pragma once

#include "loom/sdk/backend_precision.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/precision.hpp"

#include "backend_flag.hpp"
#include "dynamic_loss_scaler.hpp"

namespace loom_precision {

/// fp32 and bf16-mixed: loss scale 1.
class UnscaledPrecision : public loom::Precision, public loom::BackendPrecision {
 public:
  UnscaledPrecision(loom::ComponentContext& context, loom::ComputeDType dtype);

  loom::ComputeDType compute_dtype() const override { return dtype_; }
  bool keeps_master_weights() const override { return dtype_ != loom::ComputeDType::f32; }
  double loss_scale() const override { return 1.0; }
  bool any_nonfinite(const float* data, size_t count) const override;
  loom::PrecisionDecision after_backward(bool found_nonfinite) override;
  loom::PrecisionDecision after_backward_from_flag(loom::Backend& backend, const loom::Tensor& flag) override {
    return after_backward(read_nonfinite_flag(backend, flag));
  }
  uint64_t skipped_steps() const override { return skipped_steps_; }
  loom::LossScalerState state() const override;
  void restore_state(const loom::LossScalerState& state) override;

 private:
  loom::ComputeDType dtype_;
  uint64_t max_consecutive_skips_;
  uint64_t skipped_steps_ = 0;
  uint64_t consecutive_skips_ = 0;
};

class Fp32Precision final : public UnscaledPrecision {
 public:
  explicit Fp32Precision(loom::ComponentContext& context)
      : UnscaledPrecision(context, loom::ComputeDType::f32) {}
};

class Bf16MixedPrecision final : public UnscaledPrecision {
 public:
  explicit Bf16MixedPrecision(loom::ComponentContext& context)
      : UnscaledPrecision(context, loom::ComputeDType::bf16) {}
};

class Fp16MixedPrecision final : public loom::Precision, public loom::BackendPrecision {
 public:
  explicit Fp16MixedPrecision(loom::ComponentContext& context);

  loom::ComputeDType compute_dtype() const override { return loom::ComputeDType::f16; }
  bool keeps_master_weights() const override { return true; }
  double loss_scale() const override { return scaler_.scale(); }
  bool any_nonfinite(const float* data, size_t count) const override;
  loom::PrecisionDecision after_backward(bool found_nonfinite) override {
    return scaler_.after_backward(found_nonfinite);
  }
  loom::PrecisionDecision after_backward_from_flag(loom::Backend& backend, const loom::Tensor& flag) override {
    return after_backward(read_nonfinite_flag(backend, flag));
  }
  uint64_t skipped_steps() const override { return scaler_.state().skipped_steps; }
  loom::LossScalerState state() const override { return scaler_.state(); }
  void restore_state(const loom::LossScalerState& state) override { scaler_.restore(state); }

 private:
  DynamicLossScaler scaler_;
};

}  // namespace loom_precision
