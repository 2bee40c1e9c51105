// Optimizer: updates the flat fp32 parameter buffer from the flat gradient buffer in one fused pass.
//
// Implementations: `nvlamb`, `adamw`, `sgd` (plugins/optimizers). Contract:
// - Layout (docs/design.md §3): parameters live in one flat fp32 master buffer, gradients in one flat
//   fp32 buffer of the same layout. `setup()` receives the segment table — one named segment per
//   parameter (Hugging Face name, element offset, element count, decay rule). Only elements inside
//   a segment are read or written; elements outside every segment (frozen parameters, padding) are
//   left alone and do not count towards any norm. Segments may not overlap.
// - Life cycle: constructor (options only; nothing allocated under `loom check`) → `setup()` once
//   (allocates the state tensors, zeroed) → `step()` per applied optimizer step. State may be
//   restored after `setup()` by writing into `state_tensor(i).data` and `set_successful_steps()`.
// - Skipped steps (non-finite gradients, decided by the precision policy) never call `step()`, so
//   `successful_steps()` counts applied steps only; schedules are driven by that counter.
// - Numerics are deterministic: results depend only on the inputs, never on the thread count
//   (reductions use fixed blocks whose partial sums are combined in a fixed order).
// - Interface version 1: every buffer is host memory. Device-resident buffers (a CUDA backend)
//   will arrive as new methods in a later interface version; this one stays as it is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// How a segment's weight-decay membership is decided.
enum class DecayRule : int32_t {
  by_name = -1,  ///< the optimizer's `no_decay` name patterns decide (the usual case)
  no_decay = 0,  ///< never decayed (and treated as a no-decay tensor by LAMB's trust-ratio rule)
  decay = 1,     ///< always decayed with the optimizer's `weight_decay`
};

/// One parameter inside the flat buffers.
struct ParameterSegment {
  const char* name;  ///< Hugging Face name, NUL-terminated; `setup()` copies it
  size_t offset;     ///< index of the first element in the flat buffers
  size_t count;      ///< number of elements (may be 0)
  DecayRule decay;   ///< weight-decay membership
};

/// A named flat fp32 tensor of optimizer state (e.g. "exp_avg"), laid out like the parameters:
/// `count` equals the `total_elements` given to `setup()`, element i belongs to parameter element i.
struct OptimizerStateTensor {
  const char* name;  ///< stable name used in optimizer.safetensors; owned by the optimizer
  float* data;       ///< owned by the optimizer; valid until it is destroyed
  size_t count;      ///< elements
};

/// Inputs of one optimizer step.
struct OptimizerStepArgs {
  double lr;          ///< learning rate of this step (from the schedule)
  double grad_scale;  ///< gradients are multiplied by this before use: 1 / loss scale (1 when unscaled);
                      ///< a trainer that sums k micro-batches may fold in 1/k here (no extra pass)
};

/// What one optimizer step did.
struct OptimizerStepResult {
  double grad_norm;           ///< global L2 norm of the unscaled gradients over all segments, before clipping
  double clip_divisor;        ///< gradients were divided by this (1 = not clipped / no clipping)
  uint64_t successful_steps;  ///< the counter after this step
};

class Optimizer {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_OPTIMIZER;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "optimizer";

  virtual ~Optimizer() = default;

  /// The recipe's base learning rate (`lr`), which schedules scale.
  virtual double base_lr() const = 0;

  /// Declares the parameters: `count` segments over flat buffers of `total_elements` floats.
  /// Throws on overlapping or out-of-range segments. Allocates and zeroes the state; call once.
  virtual void setup(const ParameterSegment* segments, size_t count, size_t total_elements) = 0;
  /// Number of segments given to `setup()`.
  virtual size_t num_segments() const = 0;
  /// True when segment `index` is weight-decayed (its decay rule resolved against `no_decay`).
  virtual bool segment_decays(size_t index) const = 0;

  /// Global L2 norm of `grads` over all segments, multiplied by `grad_scale` (the unscaled norm).
  virtual double global_norm(const float* grads, double grad_scale) const = 0;
  /// L2 norm of each segment of a flat buffer (parameters or gradients) into `norms[num_segments()]`.
  virtual void segment_norms(const float* data, double* norms) const = 0;

  /// Applies one update: `params` (flat fp32 master) changes in place, `grads` is only read.
  /// Increments `successful_steps()`. Non-finite gradients must not reach it (the precision policy
  /// skips such steps); an optimizer that notices them throws instead of corrupting the weights.
  virtual OptimizerStepResult step(float* params, const float* grads, const OptimizerStepArgs& args) = 0;

  /// Optimizer steps applied so far (the schedule's input; saved in state.json).
  virtual uint64_t successful_steps() const = 0;
  /// Restores the counter (resume) or rewinds it (phase 2 restarts its schedule at 0).
  virtual void set_successful_steps(uint64_t steps) = 0;

  /// Number of state tensors (0 for an optimizer without state, e.g. SGD without momentum).
  virtual size_t num_state_tensors() const = 0;
  /// State tensor `index` (< num_state_tensors()); valid after `setup()`.
  virtual OptimizerStateTensor state_tensor(size_t index) = 0;
  /// Zeroes every state tensor and the step counter (`init_from`: a fresh optimizer).
  virtual void reset_state() = 0;
};

LOOM_SDK_NAMESPACE_END
