// The reference's warm-up schedules. See warmup_schedules.hpp for the formulas.
#include "warmup_schedules.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace loom_optim {

WarmupSchedule::WarmupSchedule(loom::ComponentContext& context, double default_warmup)
    : warmup_(context.options().get<double>("warmup", default_warmup, loom::Range{0.0, 1.0})) {}

void WarmupSchedule::setup(uint64_t total_steps) {
  if (total_steps == 0) throw loom::Error("schedule setup: the run must have at least 1 step (train.steps)");
  total_steps_ = total_steps;
}

double WarmupSchedule::lr(double base_lr, uint64_t successful_steps) const {
  if (total_steps_ == 0) throw loom::Error("schedule used before setup()");
  const double progress = static_cast<double>(successful_steps + 1) / static_cast<double>(total_steps_);
  if (progress < warmup_) return base_lr * progress / warmup_;
  return base_lr * decay(progress);
}

PolyWarmup::PolyWarmup(loom::ComponentContext& context)
    : WarmupSchedule(context, 0.01),
      degree_(context.options().get<double>("degree", 0.5, loom::Range{0.0, 100.0})) {}

double PolyWarmup::decay(double progress) const {
  return std::pow(std::max(1.0 - progress, 0.0), degree_);
}

LinearWarmup::LinearWarmup(loom::ComponentContext& context) : WarmupSchedule(context, 0.1) {}

double LinearWarmup::decay(double progress) const {
  if (warmup() >= 1.0) return 0.0;  // only reached at p ≥ 1: the end of a warm-up-only schedule
  return std::max((1.0 - progress) / (1.0 - warmup()), 0.0);  // +0 at the end, not -0
}

WarmupStableDecay::WarmupStableDecay(loom::ComponentContext& context)
    : WarmupSchedule(context, 0.05),
      decay_(context.options().get<double>("decay", 0.2, loom::Range{0.0, 1.0})),
      square_root_(context.options().choice("decay_shape", "linear", {"linear", "1-sqrt"}) == "1-sqrt") {
  if (warmup() + decay_ > 1.0 + 1e-12)
    context.options().fail("decay", "warmup + decay must be at most 1 (the stable part is what is left)");
}

double WarmupStableDecay::decay(double progress) const {
  const double start = 1.0 - decay_;
  if (progress < start) return 1.0;
  if (progress >= 1.0 || decay_ <= 0.0) return 0.0;
  const double q = (progress - start) / decay_;
  return square_root_ ? 1.0 - std::sqrt(q) : 1.0 - q;
}

ConstantSchedule::ConstantSchedule(loom::ComponentContext& context) : WarmupSchedule(context, 0.0) {}

double ConstantSchedule::decay(double /*progress*/) const {
  return 1.0;
}

}  // namespace loom_optim
