// BiasGeluBackwardCopy: bias + GELU backward that also writes its result's 16-bit copy (a named
// interface, interfaces.hpp). In 16-bit compute the gradient dGELU produces is the operand of the
// next GEMM, so loom::Backend's bias_gelu_backward is followed by a cast: a second pass that reads
// the f32 result again. Here the copy is stored in the same pass. The bias gradient still sums the
// f32 values before they are rounded; a caller that needs nothing else of them leaves dx absent
// (version 2), so a backend that sums as it computes never writes them out.
#pragma once

#include "loom/sdk/backend.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class BiasGeluBackwardCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.bias_gelu_backward_copy";
  static constexpr uint32_t kInterfaceVersion = 2;

  /// Backend::bias_gelu_backward(dy, x, bias, dx, dbias, variant), and dx_compute: bf16|f16 of dy's
  /// shape, contiguous, OVERWRITE: each element of dx rounded once (nearest even), the bits
  /// Backend::cast(dx, dx_compute) would give. dx_compute aliases none of the other tensors.
  /// dx may be absent (version 2): then dx_compute and dbias are what they would be with it, and
  /// dy's contents afterwards are unspecified (a backend may compute dx in its place).
  virtual void bias_gelu_backward_copy(const Tensor& dy, const Tensor& x, const Tensor& bias, const Tensor& dx,
                                       const Tensor& dx_compute, const Tensor& dbias, Gelu variant) = 0;

 protected:
  ~BiasGeluBackwardCopy() = default;
};

LOOM_SDK_NAMESPACE_END
