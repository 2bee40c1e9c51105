// The argument contract of RotaryEmbedding (loom/sdk/ops/rotary_embedding.hpp), checked the same way
// by every backend that offers it, and the rotation factors every backend uses.
#pragma once

#include <cmath>
#include <string>

#include "loom/sdk/tensor.hpp"
#include "loom_backend/argument_checks.hpp"
#include "loom_backend/attention_contract.hpp"

namespace loom_backend {

/// rotary_apply's arguments: x and y are [B, H, T, d] head views (last stride 1, other strides
/// free) of one float dtype, d even; y is x (the same data and strides: in place) or overlaps no
/// byte of x's span; theta is positive and finite. Returns the extents.
inline AttentionDims check_rotary_apply(const ArgumentChecks& check, const loom::Tensor& x,
                                        const loom::Tensor& y, double theta) {
  check.require(x.ndim == 4, "x " + x.describe() + " must be [B, H, T, d]");
  check.dtype("x", x, {DType::f32, DType::bf16, DType::f16});
  const AttentionDims n{x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
  check_head_view(check, "x", x, n);
  check.require(n.head_dim % 2 == 0, "x " + x.describe() +
                                         ": the head dimension d = " + std::to_string(n.head_dim) +
                                         " must be even (rotated in pairs i, i + d/2)");
  check_head_view(check, "y", y, n);
  check.require(y.dtype == x.dtype, "y " + y.describe() + " must have x's dtype");
  bool in_place = y.data == x.data;
  for (int k = 0; k < 4; ++k) in_place = in_place && (x.shape[k] <= 1 || y.strides[k] == x.strides[k]);
  if (!in_place) check.disjoint("x", x, "y", y);
  check.require(theta > 0.0 && std::isfinite(theta),
                "theta " + std::to_string(theta) + " must be positive and finite");
  return n;
}

/// The rotation of pair i (i < d/2) at position t: the angle t·theta^(−2i/d) in double, its cosine
/// and sine rounded to f32 — the factors every backend rotates by. The inverse rotation negates
/// the sine (sin is odd), which is the negated angle's.
struct RotaryFactors {
  float cos, sin;
};
inline RotaryFactors rotary_factors(int64_t t, int64_t i, int64_t head_dim, double theta) {
  const double frequency = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  const double angle = static_cast<double>(t) * frequency;
  return {static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle))};
}

}  // namespace loom_backend
