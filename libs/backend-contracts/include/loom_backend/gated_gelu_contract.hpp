// The argument contract of GatedGelu (loom/sdk/ops/geglu.hpp), checked the same way by every
// backend that offers it.
#pragma once

#include <string>

#include "loom/sdk/tensor.hpp"
#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

/// x [rows, 2·width]: the input a is columns [0, width) of each row, the gate g columns [width, 2·width).
struct GatedRows {
  int64_t rows, width;
};

namespace detail {
/// x: a contiguous float matrix of an even number of columns; returns its rows and half width.
inline GatedRows check_gated_input(const ArgumentChecks& check, const loom::Tensor& x) {
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.require(x.ndim == 2, "x " + x.describe() + " must be [N, 2I]");
  check.require(
      x.shape[1] % 2 == 0,
      "x " + x.describe() + " must have an even number of columns (the input and the gate, [N, 2I])");
  return {x.shape[0], x.shape[1] / 2};
}
}  // namespace detail

/// gated_gelu_forward's arguments: x [N, 2I] f32|bf16|f16, y [N, I] f32 or x's dtype, both
/// contiguous and disjoint.
inline GatedRows check_gated_gelu_forward(const ArgumentChecks& check, const loom::Tensor& x,
                                          const loom::Tensor& y) {
  const GatedRows shape = detail::check_gated_input(check, x);
  check.tensor("y", y, {DType::f32, DType::bf16, DType::f16});
  check.require(y.dtype == DType::f32 || y.dtype == x.dtype,
                "y " + y.describe() + " must be f32 or x's dtype (" + loom::dtype_name(x.dtype) + ")");
  check.shape("y", y, {shape.rows, shape.width});
  check.disjoint("x", x, "y", y);
  return shape;
}

/// gated_gelu_backward's arguments: dy f32 [N, I], x the forward's [N, 2I], dx f32 [N, 2I], all
/// contiguous; dx disjoint from x and dy.
inline GatedRows check_gated_gelu_backward(const ArgumentChecks& check, const loom::Tensor& dy,
                                           const loom::Tensor& x, const loom::Tensor& dx) {
  const GatedRows shape = detail::check_gated_input(check, x);
  check.tensor("dy", dy, {DType::f32});
  check.shape("dy", dy, {shape.rows, shape.width});
  check.tensor("dx", dx, {DType::f32});
  check.shape("dx", dx, {shape.rows, 2 * shape.width});
  check.disjoint("dx", dx, "x", x);
  check.disjoint("dx", dx, "dy", dy);
  return shape;
}

}  // namespace loom_backend
