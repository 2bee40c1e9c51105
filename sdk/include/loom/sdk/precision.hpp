// Precision: the compute dtype, whether fp32 master weights are kept, loss scaling and what happens
// when gradients are not finite.
//
// Implementations: `fp32`, `bf16-mixed`, `fp16-mixed` (plugins/precision). Contract, per step:
//   1. backward computes the gradients of `loss × loss_scale()` (into the flat fp32 gradient buffer);
//   2. the trainer checks them for inf/NaN (a backend op, or `any_nonfinite` on host memory);
//   3. `after_backward(found_nonfinite)` decides: apply the step (the optimizer receives
//      `grad_scale` = 1 / the scale used in 1) or skip it (the optimizer is not called, the
//      schedule does not advance, `skipped_steps()` grows), and moves the dynamic loss scale.
// A policy that can no longer make progress (the loss scale is at its minimum and the gradients
// are still not finite) throws `loom::Error` with a diagnosis instead of dividing by zero.
// The state (`LossScalerState`) is saved in state.json and restored on resume.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// The dtype blocks compute in (activations, working weights, GEMM inputs).
enum class ComputeDType : int32_t {
  f32 = 0,   ///< IEEE binary32 everywhere
  bf16 = 1,  ///< bfloat16 compute, fp32 accumulation and fp32 master weights
  f16 = 2,   ///< IEEE binary16 compute, fp32 accumulation and master weights, loss scaling
};

/// What `after_backward` decided for this step.
struct PrecisionDecision {
  bool apply;         ///< true: run the optimizer; false: skip this step (gradients not finite)
  double grad_scale;  ///< pass to `OptimizerStepArgs::grad_scale`: 1 / the loss scale of this backward
  double loss_scale;  ///< the loss scale of the next backward
};

/// The policy's resumable state.
struct LossScalerState {
  double loss_scale;           ///< current scale (1 for policies that do not scale)
  uint64_t clean_steps;        ///< consecutive finite steps since the scale last changed
  uint64_t skipped_steps;      ///< steps skipped so far because of non-finite gradients
  uint64_t consecutive_skips;  ///< skipped steps since the last applied one
};

class Precision {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_PRECISION;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "precision";

  virtual ~Precision() = default;

  /// The dtype blocks compute in.
  virtual ComputeDType compute_dtype() const = 0;
  /// True when an fp32 master copy is kept beside lower-precision working weights (the flat fp32
  /// buffer is then the master; working weights are cast from it after every applied step).
  virtual bool keeps_master_weights() const = 0;

  /// The factor the loss is multiplied by before backward (1 when the policy does not scale).
  virtual double loss_scale() const = 0;
  /// True when any of `count` floats at `data` (host memory) is inf or NaN.
  virtual bool any_nonfinite(const float* data, size_t count) const = 0;
  /// Decides whether the step is applied and updates the loss scale. Throws `loom::Error` with a
  /// diagnosis when training cannot continue.
  virtual PrecisionDecision after_backward(bool found_nonfinite) = 0;
  /// Steps skipped so far because of non-finite gradients (a metric).
  virtual uint64_t skipped_steps() const = 0;

  /// The resumable state.
  virtual LossScalerState state() const = 0;
  /// Restores a saved state; throws when it is invalid for this policy (e.g. a non-positive scale).
  virtual void restore_state(const LossScalerState& state) = 0;
};

LOOM_SDK_NAMESPACE_END
