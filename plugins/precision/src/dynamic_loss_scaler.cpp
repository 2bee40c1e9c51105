// DynamicLossScaler: transitions and validation. See dynamic_loss_scaler.hpp.
#include "dynamic_loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "loom/sdk/error.hpp"

namespace loom_precision {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

LossScalerSettings read_loss_scaler_settings(loom::Options& options) {
  constexpr double kHuge = 1e38;  // below fp32 max, so 1/scale and loss·scale stay finite
  LossScalerSettings s;
  s.initial_scale = options.get<double>("initial_scale", s.initial_scale, loom::Range{1e-30, kHuge});
  // growth_factor 1 could never grow the scale back; backoff_factor 1 would not lower it on an
  // overflow, 0 would lower it to 0.
  s.growth_factor = options.get<double>("growth_factor", s.growth_factor, loom::Range::open_closed(1.0, 1e6));
  s.backoff_factor = options.get<double>("backoff_factor", s.backoff_factor, loom::Range::open(0.0, 1.0));
  s.growth_interval = options.get<uint64_t>("growth_interval", s.growth_interval, loom::Range{1, 1e12});
  s.min_scale = options.get<double>("min_scale", s.min_scale, loom::Range{1e-30, kHuge});
  s.max_scale = options.get<double>("max_scale", s.max_scale, loom::Range{1e-30, kHuge});
  if (s.min_scale > s.max_scale)
    options.fail("min_scale",
                 "min_scale " + number(s.min_scale) + " is above max_scale " + number(s.max_scale));
  else if (s.initial_scale < s.min_scale || s.initial_scale > s.max_scale)
    options.fail("initial_scale", "initial_scale " + number(s.initial_scale) +
                                      " lies outside [min_scale, max_scale] = [" + number(s.min_scale) +
                                      ", " + number(s.max_scale) + "]");
  return s;
}

DynamicLossScaler::DynamicLossScaler(const LossScalerSettings& settings)
    : settings_(settings), scale_(settings.initial_scale) {}

loom::PrecisionDecision DynamicLossScaler::after_backward(bool found_nonfinite) {
  const double used = scale_;
  if (found_nonfinite) {
    ++skipped_steps_;
    ++consecutive_skips_;
    clean_steps_ = 0;
    if (used <= settings_.min_scale)
      throw loom::Error(
          "fp16 loss scale is at its minimum (min_scale = " + number(settings_.min_scale) +
          ") and the gradients are still not finite (" + std::to_string(consecutive_skips_) +
          " consecutive skipped steps, " + std::to_string(skipped_steps_) +
          " in total): the model produces inf/NaN in fp16 even without loss scaling, so it has diverged or "
          "overflows fp16. Lower the learning rate, use precision \"bf16-mixed\" or \"fp32\", or resume from "
          "an "
          "earlier checkpoint");
    scale_ = std::max(used * settings_.backoff_factor, settings_.min_scale);
    return {false, 1.0 / used, scale_};
  }
  consecutive_skips_ = 0;
  if (++clean_steps_ >= settings_.growth_interval) {
    scale_ = std::min(used * settings_.growth_factor, settings_.max_scale);
    clean_steps_ = 0;
  }
  return {true, 1.0 / used, scale_};
}

loom::LossScalerState DynamicLossScaler::state() const {
  return {scale_, clean_steps_, skipped_steps_, consecutive_skips_};
}

void DynamicLossScaler::restore(const loom::LossScalerState& state) {
  if (!std::isfinite(state.loss_scale) || state.loss_scale < settings_.min_scale ||
      state.loss_scale > settings_.max_scale)
    throw loom::Error("saved loss scale " + number(state.loss_scale) +
                      " lies outside [min_scale, max_scale] = [" + number(settings_.min_scale) + ", " +
                      number(settings_.max_scale) +
                      "] of this recipe; change the recipe's scaler bounds or start the scaler fresh");
  // A clean-step count at or past a (since lowered) growth_interval grows at the next clean step.
  scale_ = state.loss_scale;
  clean_steps_ = state.clean_steps;
  skipped_steps_ = state.skipped_steps;
  consecutive_skips_ = state.consecutive_skips;
}

}  // namespace loom_precision
