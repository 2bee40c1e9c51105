// BackendOptimizer: an optimizer that can run where the parameters live — its state in backend
// memory, its update as the backend's OptimizerSteps passes (ops/optimizer_steps.hpp) — offered
// beside loom::Optimizer as a named interface (interfaces.hpp). Interface version 1 of the
// optimizer kind (optimizer.hpp) stays as it is: an optimizer or a backend without these
// interfaces runs on host memory, as before (docs/decisions/device-optimizer.md).
//
// Life cycle: Optimizer::setup() → attach() once → per step: inspect_gradients() (before the
// precision policy decides) and, when the step is applied, step_on_backend(). The successful-step
// counter, the options and the schedule's inputs stay on the host (Optimizer's methods keep
// working); the state tensors move to the backend at attach(), so Optimizer::state_tensor() and
// Optimizer::step() throw from then on — checkpoints read backend_state() through host copies.
//
// BackendOptimizerWorkingCopy, a second named interface beside it, lets the host hand the 16-bit
// working copy of the weights to the optimizer's plan, so that the update passes write it
// (ops/optimizer_working_copy.hpp) instead of the host casting the master weights after each step
// (docs/decisions/optimizer-working-copy.md). An optimizer without it runs as before.
#pragma once

#include <cstddef>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/ops/optimizer_working_copy.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// A state tensor in backend memory: f32 [total_elements], contiguous, on the attached backend.
struct BackendStateTensor {
  const char* name;  ///< the same name as state_tensor(i).name ("exp_avg", ...), owned by the optimizer
  Tensor tensor;
};

class BackendOptimizer {
 public:
  static constexpr const char* kInterfaceName = "loom.optimizer.backend";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Moves the optimizer onto `backend`, whose op family `steps` (the same component's
  /// OptimizerSteps) runs its passes: uploads the segment table of setup(), allocates the state
  /// tensors in backend memory with their current values (zeros, or what was restored) and frees
  /// the host ones. Call once, after setup(); `backend` must outlive the optimizer.
  virtual void attach(Backend& backend, OptimizerSteps& steps) = 0;

  /// The step's first pass, before the precision policy decides: Σ g² of `grads` (the flat f32
  /// gradients, backend memory) kept on the backend for the update, and `nonfinite_flag` (i32 [1],
  /// backend memory) overwritten with 1 when a gradient the optimizer reads is inf or NaN, else 0.
  virtual void inspect_gradients(const Tensor& grads, const Tensor& nonfinite_flag) = 0;

  /// Applies one update on the backend, exactly as Optimizer::step() would on host copies of the
  /// same buffers: `params` (flat f32 master weights) changes in place, `grads` (the buffer given to
  /// inspect_gradients, unchanged since) is only read. Increments successful_steps(). Reads nothing
  /// back; throws when inspect_gradients did not run since the last update.
  virtual void step_on_backend(const Tensor& params, const Tensor& grads, const OptimizerStepArgs& args) = 0;

  /// The last update's result (grad_norm and clip_divisor are 0 before the first): copied from the
  /// backend, which on a GPU waits for the queued work — log steps only.
  virtual OptimizerStepResult read_last_result() = 0;

  /// State tensor `index` (< Optimizer::num_state_tensors()) in backend memory; valid after attach().
  virtual BackendStateTensor backend_state(size_t index) = 0;

 protected:
  ~BackendOptimizer() = default;
};

class BackendOptimizerWorkingCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.optimizer.backend_working_copy";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// After BackendOptimizer::attach(): sets `working` (bf16 or f16 [total_elements], contiguous, on
  /// the attached backend) as the working copy of the optimizer's plan through `copy`, the attached
  /// backend's OptimizerWorkingCopy, so that every later step_on_backend also writes the new
  /// weights' 16-bit values there, the bits Backend::cast of the master weights gives, for every
  /// element the update reads. An undefined tensor stops it. Throws before attach().
  virtual void write_working_copy(OptimizerWorkingCopy& copy, const Tensor& working) = 0;

 protected:
  ~BackendOptimizerWorkingCopy() = default;
};

LOOM_SDK_NAMESPACE_END
