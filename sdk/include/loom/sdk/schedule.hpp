// Schedule: the learning rate as a function of the count of successful optimizer steps.
//
// Implementations: `poly-warmup`, `linear-warmup`, `constant` (plugins/optimizers). Contract:
// - A schedule holds no per-step state: the learning rate of the next step is a pure function of
//   the optimizer's successful-step counter, so a checkpoint stores the counter, never the lr, and
//   skipped steps (non-finite gradients) do not advance the schedule.
// - `setup(total_steps)` once before use (`train.steps` of the run); `lr()` may then be called any
//   number of times, from any thread.
#pragma once

#include <cstdint>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class Schedule {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_SCHEDULE;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "schedule";

  virtual ~Schedule() = default;

  /// The number of optimizer steps of the run (the schedule's horizon); must be ≥ 1.
  virtual void setup(uint64_t total_steps) = 0;
  /// Learning rate of the step taken after `successful_steps` successful steps (the first step
  /// asks with 0), given the optimizer's base learning rate.
  virtual double lr(double base_lr, uint64_t successful_steps) const = 0;
};

LOOM_SDK_NAMESPACE_END
