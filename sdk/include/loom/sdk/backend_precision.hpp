// BackendPrecision: a precision policy that decides a step from a non-finite flag in backend
// memory instead of scanning host copies of the gradients (a named interface beside
// loom::Precision, interfaces.hpp; docs/decisions/device-optimizer.md).
//
// On the backend path the trainer asks the optimizer (BackendOptimizer::inspect_gradients) for
// the flag, which covers every gradient the optimizer reads; a policy offering this interface
// accepts that check in place of its own any_nonfinite() and reads the flag once — on a GPU the
// step's one synchronisation. A policy without it keeps the host path.
#pragma once

#include "loom/sdk/backend.hpp"
#include "loom/sdk/precision.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class BackendPrecision {
 public:
  static constexpr const char* kInterfaceName = "loom.precision.backend_flag";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Precision::after_backward(found_nonfinite) with found_nonfinite = (flag[0] ≠ 0), `flag` an
  /// i32 [1] in `backend`'s memory, read with one 4-byte copy_to_host. Same transitions, state and
  /// errors as after_backward.
  virtual PrecisionDecision after_backward_from_flag(Backend& backend, const Tensor& flag) = 0;

 protected:
  ~BackendPrecision() = default;
};

LOOM_SDK_NAMESPACE_END
