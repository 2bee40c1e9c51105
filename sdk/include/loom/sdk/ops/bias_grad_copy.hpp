// BiasGradCopy: a bias gradient that also writes the 16-bit copy of the gradient it sums (a named
// interface, interfaces.hpp). In 16-bit compute the gradient of a linear layer's output is read
// twice after it is made: by bias_grad, which sums its columns in f32, and by the cast that makes
// the operand of the layer's backward GEMMs. Here one pass does both, reading the f32 gradient once.
#pragma once

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class BiasGradCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.bias_grad_copy";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Backend::bias_grad(dy, dbias) — dbias ACCUMULATES the column sums of dy, the same bits — and
  /// dy_compute: bf16|f16 of dy's shape, contiguous, OVERWRITE: each element of dy rounded once
  /// (nearest even), the bits Backend::cast(dy, dy_compute) would give. dy_compute aliases neither
  /// dy nor dbias.
  virtual void bias_grad_copy(const Tensor& dy, const Tensor& dbias, const Tensor& dy_compute) = 0;

 protected:
  ~BiasGradCopy() = default;
};

LOOM_SDK_NAMESPACE_END
