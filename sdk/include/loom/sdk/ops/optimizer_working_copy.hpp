// OptimizerWorkingCopy: the OptimizerSteps passes also write the 16-bit working copy of the weights
// (a named interface beside OptimizerSteps, interfaces.hpp; docs/decisions/optimizer-working-copy.md).
// In 16-bit mixed precision a step used to end with the update passes over the f32 master weights
// and then Backend::cast of the whole master buffer into the bf16/f16 working copy: a second pass
// that reads every weight again. With a working copy set on a plan, the pass that gives each
// element its final weight of the step stores that weight's 16-bit value as well:
//   adamw_step, sgd_step   their one pass
//   lamb_step              stage 2 for the segments with trust ratio, stage 1 for the others
// OptimizerSteps version 1 stays as it is; a backend without this interface leaves the cast to
// the caller, as before.
#pragma once

#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class OptimizerWorkingCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.optimizer_working_copy";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// From the next update of `plan` (a plan of this backend's OptimizerSteps) on, adamw_step,
  /// lamb_step and sgd_step also write `working`: bf16 or f16 [total_elements], contiguous, in this
  /// backend's memory, aliasing none of the update's other buffers. Each element inside a segment
  /// gets its new weight rounded once to nearest even — the bits Backend::cast(params, working)
  /// gives. Elements outside every segment are never written, and an update that changes nothing
  /// (Σ g² not finite) writes nothing: the caller casts the whole copy once, where the master
  /// weights are set other than by an update. An undefined tensor (Tensor{}) stops the writes.
  /// Throws loom::Error naming the argument when `working` is not such a tensor.
  virtual void set_working_copy(OptimizerPlan& plan, const Tensor& working) = 0;

 protected:
  ~OptimizerWorkingCopy() = default;
};

LOOM_SDK_NAMESPACE_END
