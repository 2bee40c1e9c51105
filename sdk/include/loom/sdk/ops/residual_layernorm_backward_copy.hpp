// ResidualLayerNormBackwardCopy: the backward of the fused "add & norm" (ResidualLayerNorm) that
// also writes the 16-bit copy of the branch gradient (a named interface, interfaces.hpp). In
// 16-bit compute d_branch, the gradient of the dense layer's output, is the operand of that layer's
// two backward GEMMs, so residual_layernorm_backward is followed by a cast: a second pass reading
// the f32 result again. Here the copy is stored in the same pass. The f32 d_branch stays, because
// the bias gradient sums it before rounding.
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class ResidualLayerNormBackwardCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.residual_layernorm_backward_copy";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// ResidualLayerNorm::residual_layernorm_backward with the same arguments, and d_branch_compute:
  /// bf16|f16 of d_branch's shape, contiguous, OVERWRITE: each element of d_branch rounded once
  /// (nearest even), the bits Backend::cast(d_branch, d_branch_compute) would give. It aliases none
  /// of the other tensors.
  virtual void residual_layernorm_backward_copy(const Tensor& d_out, const Tensor& sum, const Tensor& gamma,
                                                const Tensor& mean, const Tensor& rstd, float p, uint64_t seed,
                                                uint64_t offset, const Tensor& d_sum, const Tensor& d_branch,
                                                const Tensor& d_branch_compute, const Tensor& dgamma,
                                                const Tensor& dbeta, const Tensor& dbias) = 0;

 protected:
  ~ResidualLayerNormBackwardCopy() = default;
};

LOOM_SDK_NAMESPACE_END
