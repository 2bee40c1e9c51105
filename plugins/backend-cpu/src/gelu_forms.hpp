// GELU's two forms (loom::Gelu) and their derivatives as f32 element functions, written once for
// every op that applies GELU: bias + GELU (activations.cpp) and the gated GELU (gated_gelu.cpp).
// Inline, so a `#pragma omp simd` loop calling them vectorises with libmvec's erff/tanhf/expf
// (vector_math.hpp) as if the expressions were written in the loop.
#pragma once

#include <cmath>

#include "loom/sdk/backend.hpp"
#include "vector_math.hpp"

namespace loom_cpu {

/// GELU with the exact normal CDF: 0.5·v·(1 + erf(v/√2)) (Hugging Face "gelu").
struct ErfGelu {
  static constexpr float kSqrtHalf = 0.70710678118654752f;    // 1/√2
  static constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1/√(2π)
  static float value(float v) { return 0.5f * v * (1.0f + erff(v * kSqrtHalf)); }
  /// d/dv: Φ(v) + v·φ(v).
  static float derivative(float v) {
    const float cdf = 0.5f * (1.0f + erff(v * kSqrtHalf));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    return cdf + v * pdf;
  }
};

/// GELU with the tanh approximation: 0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³))) (Hugging Face
/// "gelu_pytorch_tanh").
struct TanhGelu {
  static constexpr float kSqrt2OverPi = 0.79788456080286536f;  // √(2/π)
  static constexpr float kCubic = 0.044715f;
  static float value(float v) { return 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kCubic * v * v * v))); }
  static float derivative(float v) {
    const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
  }
};

/// Calls `body(ErfGelu{})` or `body(TanhGelu{})` for `variant`, so a loop is compiled per form
/// with no branch inside it.
template <typename Body>
void with_gelu_form(loom::Gelu variant, Body&& body) {
  if (variant == loom::Gelu::erf)
    body(ErfGelu{});
  else
    body(TanhGelu{});
}

}  // namespace loom_cpu
