// OptimizerSteps: the optimizer update as fused multi-tensor passes over backend memory — the op
// family that lets a step run where the parameters live, with no gradient or weight crossing to
// the host (a named interface, interfaces.hpp; docs/decisions/device-optimizer.md).
//
// The buffers are the model's flat f32 ones (docs/design.md §3): master weights, gradients and
// the optimizer's state tensors (exp_avg, exp_avg_sq, momentum_buffer), all [total_elements],
// contiguous f32 on this backend's device. A *plan* holds the segment table, uploaded once at
// setup (create_plan), the scratch the passes reduce into and the step's device scalars.
//
// One step, on the backend, as the optimizers of plugins/optimizers compute it on the host:
//   gradient_norm                     Σ g² over the segments (raw gradients, still loss-scaled),
//                                     and the non-finite flag the precision policy decides from
//   adamw_step | lamb_step | sgd_step the update; the clip divisor follows from the device Σ g²,
//                                     so nothing is read back between the passes
//   read_report                       the last update's global norm and clip divisor: a copy to
//                                     the host, for log steps only
// Numerics (what a second backend must reproduce): the per-element arithmetic is the f32
// arithmetic of libs/optimizer-passes (no fused multiply-add, IEEE division and square root);
// sums of squares and norms are f64; the clip divisor, the f32 gradient multiplier
// grad_scale / divisor and LAMB's step sizes lr·‖w‖/‖u‖ are computed in f64 and rounded once.
// Reductions are deterministic (no float atomics): the same inputs give the same bits on every
// run. backend/cpu also reduces in the order of libs/optimizer-passes, so its results equal the
// host optimizers' bit for bit; another backend may reduce in another fixed order (its norms then
// differ in the last bits of an f64).
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// One parameter inside the flat buffers, as the passes see it (the optimizer resolves names,
/// decay rules and options into these numbers).
struct OptimizerSegment {
  uint64_t offset;      ///< first element
  uint64_t count;       ///< elements (may be 0)
  float weight_decay;   ///< this segment's decay (decoupled for AdamW and LAMB, L2 for SGD); 0 = none
  int32_t trust_ratio;  ///< lamb_step: 1 = the update of this segment is scaled by ‖w‖/‖u‖
};

/// How the clip divisor c follows from the unscaled global norm N = √(Σ g²)·grad_scale.
enum class ClipRule : int32_t {
  none = 0,        ///< c = 1
  above_max = 1,   ///< c = N / max_grad_norm when N > max_grad_norm, else 1 (NVIDIA's LAMB)
  torch_rule = 2,  ///< c = (N + 1e-6) / max_grad_norm when that exceeds 1, else 1 (clip_grad_norm_)
};

/// How the step's gradients enter the update: ĝ = g·(grad_scale / c) (the multiplier rounded to
/// f32 once).
struct GradientScaling {
  double grad_scale;     ///< 1 / the loss scale of the backward (1 when unscaled), > 0
  double max_grad_norm;  ///< > 0 unless clip is ClipRule::none
  ClipRule clip;
};

/// The f32 constants of one Adam-family step, computed by the optimizer in f64 and rounded once:
///   m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ·ĝ
///   u = (m / bias_correction1) / (√(v / bias_correction2) + eps) + weight_decay·w
struct AdamConstants {
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float bias_correction1;  ///< 1 − β1^t at successful step t (1-based), or 1 without bias correction
  float bias_correction2;  ///< 1 − β2^t, or 1
  float eps;
};

/// The constants of one SGD step: d = ĝ + weight_decay·w; with a momentum buffer b,
/// b = d on the first step, else b = μ·b + keep·d; d = d + μ·b (Nesterov) or b; w = w − lr·d.
struct SgdConstants {
  float momentum;      ///< μ (used only with a momentum buffer)
  float keep;          ///< 1 − dampening
  int32_t nesterov;    ///< 1: Nesterov momentum
  int32_t first_step;  ///< 1: the optimizer's first applied step (the buffer starts as d)
};

/// What read_report returns: the last update's numbers.
struct OptimizerStepReport {
  double grad_norm;     ///< unscaled global gradient norm N before clipping (0 before any update)
  double clip_divisor;  ///< c (0 before any update)
};

/// A segment table on a backend with its scratch; opaque, used only by the backend that made it.
class OptimizerPlan {
 protected:
  ~OptimizerPlan() = default;
};

class OptimizerSteps {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.optimizer_steps";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Uploads `count` segments over flat buffers of `total_elements` floats (once, at setup) and
  /// allocates the passes' scratch. Throws loom::Error naming the segment when one lies outside
  /// the buffers or two overlap. Elements outside every segment are never read or written.
  virtual OptimizerPlan* create_plan(const OptimizerSegment* segments, size_t count,
                                     size_t total_elements) = 0;
  /// Frees a plan of this backend (nullptr is ignored).
  virtual void destroy_plan(OptimizerPlan* plan) = 0;

  /// First pass of a step, before the precision policy decides: Σ g² over the segments into the
  /// plan (f64), and `nonfinite_flag` (i32 [1]) OVERWRITTEN with 1 when a gradient inside a
  /// segment is inf or NaN (Σ g² is then not finite), else 0. Reads nothing back.
  virtual void gradient_norm(OptimizerPlan& plan, const Tensor& grads, const Tensor& nonfinite_flag) = 0;

  /// AdamW in one pass: ĝ as GradientScaling from the Σ g² of the last gradient_norm, the
  /// moments, w = w − f32(lr)·u. `params`, `exp_avg`, `exp_avg_sq` change in place; `grads` is
  /// only read; the four occupy disjoint memory. Throws when no gradient_norm ran since the last
  /// update. When that Σ g² is not finite (a step the precision policy should have skipped) the
  /// update changes nothing and read_report shows the non-finite norm.
  virtual void adamw_step(OptimizerPlan& plan, const Tensor& params, const Tensor& grads,
                          const Tensor& exp_avg, const Tensor& exp_avg_sq, const GradientScaling& scaling,
                          const AdamConstants& constants, double lr) = 0;

  /// NVIDIA's LAMB (plugins/optimizers nvlamb): stage 1 updates the moments and, per segment, Σ w² and
  /// Σ u² (w before the update); a segment without trust ratio is finished there with
  /// w = w − f32(lr)·u. Per segment with trust ratio: r = f32(lr·‖w‖/‖u‖) when both norms are
  /// nonzero, else f32(lr); stage 2 recomputes u from the new moments and sets w = w − r·u.
  /// Same inputs and preconditions as adamw_step.
  virtual void lamb_step(OptimizerPlan& plan, const Tensor& params, const Tensor& grads,
                         const Tensor& exp_avg, const Tensor& exp_avg_sq, const GradientScaling& scaling,
                         const AdamConstants& constants, double lr) = 0;

  /// SGD in one pass (SgdConstants); `momentum_buffer` is absent for SGD without momentum. Same
  /// preconditions as adamw_step.
  virtual void sgd_step(OptimizerPlan& plan, const Tensor& params, const Tensor& grads,
                        const Tensor& momentum_buffer, const GradientScaling& scaling,
                        const SgdConstants& constants, double lr) = 0;

  /// The last update's global norm and clip divisor. Copies from device memory (on a GPU it waits
  /// for the queued work): call it at log steps, not every step.
  virtual OptimizerStepReport read_report(const OptimizerPlan& plan) = 0;

 protected:
  ~OptimizerSteps() = default;
};

LOOM_SDK_NAMESPACE_END
