// The learning-rate schedules of the reference (docs/reference.md §2.2), each a pure function
// of the successful-step count s and the run's step count T, with t = s + 1 and p = t / T:
//   schedule/poly-warmup    lr = base·p/warmup if p < warmup, else base·max(1 − p, 0)^degree
//   schedule/linear-warmup  lr = base·p/warmup if p < warmup, else base·max((p − 1)/(warmup − 1), 0)
//   schedule/constant       lr = base·p/warmup if p < warmup, else base
//   schedule/warmup-stable-decay   lr = base·p/warmup if p < warmup; base while p < 1 − decay; then,
//                           with q = (p − (1 − decay))/decay, base·(1 − q) ("linear") or
//                           base·(1 − √q) ("1-sqrt"), 0 past the horizon (the trapezoidal schedule
//                           ModernBERT pre-trains with; Hägele et al. 2024 for 1-sqrt)
// `warmup` is a proportion of T. Past the horizon (p > 1) poly-warmup gives 0 where the reference
// computes NaN. docs/decisions/schedules.md explains the counter semantics.
#pragma once

#include <cstdint>

#include "loom/sdk/plugin.hpp"
#include "loom/sdk/schedule.hpp"

namespace loom_optim {

/// Shared by the three: the warm-up proportion and the horizon.
class WarmupSchedule : public loom::Schedule {
 public:
  WarmupSchedule(loom::ComponentContext& context, double default_warmup);
  void setup(uint64_t total_steps) override;
  double lr(double base_lr, uint64_t successful_steps) const override;

 protected:
  /// The lr multiplier after warm-up at progress p (≥ warmup).
  virtual double decay(double progress) const = 0;
  double warmup() const { return warmup_; }

 private:
  double warmup_;
  uint64_t total_steps_ = 0;
};

class PolyWarmup final : public WarmupSchedule {
 public:
  explicit PolyWarmup(loom::ComponentContext& context);

 private:
  double decay(double progress) const override;
  double degree_;
};

class LinearWarmup final : public WarmupSchedule {
 public:
  explicit LinearWarmup(loom::ComponentContext& context);

 private:
  double decay(double progress) const override;
};

class WarmupStableDecay final : public WarmupSchedule {
 public:
  explicit WarmupStableDecay(loom::ComponentContext& context);

 private:
  double decay(double progress) const override;
  double decay_;      ///< the proportion of the run that decays
  bool square_root_;  ///< "1-sqrt" decay instead of linear
};

class ConstantSchedule final : public WarmupSchedule {
 public:
  explicit ConstantSchedule(loom::ComponentContext& context);

 private:
  double decay(double progress) const override;
};

}  // namespace loom_optim
