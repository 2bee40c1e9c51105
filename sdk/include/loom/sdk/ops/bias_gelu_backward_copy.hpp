// BiasGeluBackwardCopy: bias + GELU backward that also writes its result's 16-bit copy (a named
// interface, interfaces.hpp). In 16-bit compute the gradient dGELU produces is the operand of the
// next GEMM, so loom::Backend's bias_gelu_backward is followed by a cast: a second pass that reads
// the f32 result again. Here the copy is stored in the same pass. The f32 result stays, because
// the bias gradient sums it before rounding.
#pragma once

#include "loom/sdk/backend.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class BiasGeluBackwardCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.bias_gelu_backward_copy";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Backend::bias_gelu_backward(dy, x, bias, dx, dbias, variant), and dx_compute: bf16|f16 of dx's
  /// shape, contiguous, OVERWRITE: each element dx rounded once (nearest even), the bits
  /// Backend::cast(dx, dx_compute) would give. dx_compute aliases none of the other tensors.
  virtual void bias_gelu_backward_copy(const Tensor& dy, const Tensor& x, const Tensor& bias, const Tensor& dx,
                                       const Tensor& dx_compute, const Tensor& dbias, Gelu variant) = 0;

 protected:
  ~BiasGeluBackwardCopy() = default;
};

LOOM_SDK_NAMESPACE_END
