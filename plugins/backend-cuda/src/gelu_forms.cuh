// GELU's two forms (loom::Gelu: erf, Hugging Face "gelu"; tanh, "gelu_pytorch_tanh") and their
// derivatives as f32 device functions, written once for every kernel that applies GELU: bias +
// GELU (bias_activations.cu) and the gated GELU of GeGLU (gated_gelu.cu).
#pragma once

#include <cuda_runtime.h>

namespace loom_cuda {

inline constexpr float kSqrtHalf = 0.70710678118654752f;     // 1/√2
inline constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1/√(2π)
inline constexpr float kSqrt2OverPi = 0.79788456080286536f;  // √(2/π)
inline constexpr float kCubic = 0.044715f;

/// gelu(v): 0.5·v·(1 + erf(v/√2)), or 0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³))).
__device__ __forceinline__ float gelu(float v, bool erf_form) {
  return erf_form ? 0.5f * v * (1.0f + erff(v * kSqrtHalf))
                  : 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kCubic * v * v * v)));
}

/// gelu'(v): Φ(v) + v·φ(v) for the erf form, the tanh form's derivative otherwise.
__device__ __forceinline__ float gelu_derivative(float v, bool erf_form) {
  if (erf_form) {
    const float cdf = 0.5f * (1.0f + erff(v * kSqrtHalf));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    return cdf + v * pdf;
  }
  const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
  return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
}

}  // namespace loom_cuda
