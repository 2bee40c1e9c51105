// DynamicLossScaler: the fp16 loss scale and its transitions (torch.cuda.amp.GradScaler, which the
// reference pretraining uses, plus apex amp's cap and an explicit floor; docs/reference.md §2.3):
// - non-finite gradients: the step is skipped, scale ← max(scale·backoff_factor, min_scale), the
//   clean-step counter restarts; an overflow while the scale is already at min_scale cannot be
//   cured by scaling and throws a diagnosis (the reference divides by a scale of 0 instead);
// - finite gradients: the step is applied; after growth_interval consecutive clean steps,
//   scale ← min(scale·growth_factor, max_scale) and the counter restarts.
#pragma once

#include <cstdint>

#include "loom/sdk/options.hpp"
#include "loom/sdk/precision.hpp"

namespace loom_precision {

struct LossScalerSettings {
  double initial_scale = 1048576.0;  // 2^20: the reference pretraining's GradScaler(init_scale)
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  uint64_t growth_interval = 2000;
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24: apex amp's max_loss_scale
};

/// Reads and validates the settings from the [precision] table (problems go to `options`).
LossScalerSettings read_loss_scaler_settings(loom::Options& options);

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(const LossScalerSettings& settings);

  double scale() const { return scale_; }
  /// Applies the transition for one backward; throws loom::Error at the floor.
  loom::PrecisionDecision after_backward(bool found_nonfinite);
  loom::LossScalerState state() const;
  void restore(const loom::LossScalerState& state);

 private:
  LossScalerSettings settings_;
  double scale_;
  uint64_t clean_steps_ = 0;
  uint64_t skipped_steps_ = 0;
  uint64_t consecutive_skips_ = 0;
};

}  // namespace loom_precision
