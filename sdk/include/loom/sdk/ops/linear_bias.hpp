// LinearBias: a linear layer's forward with its bias, y = x·Wᵀ + bias, as one op (a named
// interface, interfaces.hpp), where loom::Backend needs gemm into f32, bias_add and — when y is a
// 16-bit GEMM operand for the next op — a cast: three passes over [rows, out], two of them in f32.
// A GPU backend computes it as one GEMM whose epilogue adds the bias and rounds once (cuBLASLt's
// BIAS epilogue); a backend that does not offer it leaves blocks on the separate ops.
//
// Numerics: each y[r, o] is the f32 value gemm(x, false, w, true, ·) would produce for it, plus
// bias[o] added in f32, rounded once to y's dtype (nearest even) — what gemm into f32, bias_add
// and cast give, up to the GEMM's own summation order (which gemm does not fix either).
#pragma once

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class LinearBias {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.linear_bias";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// x: [rows, in] and w: [out, in], both f32 or both the same 16-bit dtype, unit column stride
  /// (any row stride gemm accepts); bias: f32 [out], contiguous; y: [rows, out] f32 (unit column
  /// stride, any row stride gemm accepts) or x's 16-bit dtype (contiguous), OVERWRITE. scratch: f32
  /// [rows, out], contiguous, or absent when y is f32:
  /// memory the backend may use for the unfused passes (its contents afterwards are unspecified);
  /// a backend that fuses does not touch it.
  virtual void linear_bias_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                                   const Tensor& scratch) = 0;

 protected:
  ~LinearBias() = default;
};

LOOM_SDK_NAMESPACE_END
