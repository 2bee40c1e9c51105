// The precision policies. See precision_policies.hpp.
#include "precision_policies.hpp"

#include <string>

#include "nonfinite_scan.hpp"

namespace loom_precision {

UnscaledPrecision::UnscaledPrecision(loom::ComponentContext& context, loom::ComputeDType dtype)
    : dtype_(dtype),
      max_consecutive_skips_(
          context.options().get<uint64_t>("max_consecutive_skips", 10, loom::Range{0, 1e12})) {}

bool UnscaledPrecision::any_nonfinite(const float* data, size_t count) const {
  return loom_precision::any_nonfinite(data, count);
}

loom::PrecisionDecision UnscaledPrecision::after_backward(bool found_nonfinite) {
  if (!found_nonfinite) {
    consecutive_skips_ = 0;
    return {true, 1.0, 1.0};
  }
  ++skipped_steps_;
  ++consecutive_skips_;
  if (max_consecutive_skips_ != 0 && consecutive_skips_ >= max_consecutive_skips_)
    throw loom::Error(std::string("the gradients were not finite in ") + std::to_string(consecutive_skips_) +
                      " consecutive steps (" + std::to_string(skipped_steps_) + " skipped in total) in " +
                      (dtype_ == loom::ComputeDType::f32 ? "fp32" : "bf16-mixed") +
                      ", where loss scaling cannot help: the model has diverged. Lower the learning rate or "
                      "warm up longer, check the data, or resume from an earlier checkpoint "
                      "(precision.max_consecutive_skips sets this limit; 0 disables it)");
  return {false, 1.0, 1.0};
}

loom::LossScalerState UnscaledPrecision::state() const {
  return {1.0, 0, skipped_steps_, consecutive_skips_};
}

void UnscaledPrecision::restore_state(const loom::LossScalerState& state) {
  // A run switched from fp16-mixed keeps its skip counters; its loss scale does not apply here.
  skipped_steps_ = state.skipped_steps;
  consecutive_skips_ = state.consecutive_skips;
}

Fp16MixedPrecision::Fp16MixedPrecision(loom::ComponentContext& context)
    : scaler_(read_loss_scaler_settings(context.options())) {}

bool Fp16MixedPrecision::any_nonfinite(const float* data, size_t count) const {
  return loom_precision::any_nonfinite(data, count);
}

}  // namespace loom_precision
