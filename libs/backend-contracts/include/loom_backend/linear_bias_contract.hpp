// The argument contract of LinearBias (loom/sdk/ops/linear_bias.hpp), checked the same way by
// every backend that offers it, and the unfused form both backends share for a row-strided f32 y.
// The product's own operands (x, w, y's strides) are checked by the backend's gemm contract
// (gemm_contract.hpp), which the op runs through either way.
#pragma once

#include <string>

#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

/// The shape of a linear layer's forward: rows × in → rows × out.
struct LinearShape {
  int64_t rows, in, out;
};

namespace detail {

/// Fails naming `name` unless `t` is a matrix.
inline void check_matrix(const ArgumentChecks& check, const char* name, const loom::Tensor& t) {
  check.on_device(name, t);
  if (t.ndim == 2) return;
  std::string message(name);
  message.append(" is ").append(t.describe()).append("; a matrix [rows, columns] is expected");
  check.require(false, message);
}

}  // namespace detail

inline LinearShape check_linear_bias_forward(const ArgumentChecks& check, const loom::Tensor& x,
                                             const loom::Tensor& w, const loom::Tensor& bias,
                                             const loom::Tensor& y, const loom::Tensor& scratch) {
  detail::check_matrix(check, "x", x);
  detail::check_matrix(check, "w", w);
  detail::check_matrix(check, "y", y);
  check.dtype("x", x, {DType::f32, DType::bf16, DType::f16});
  check.require(w.dtype == x.dtype, "w must have the dtype of x");
  check.dtype("y", y, {DType::f32, DType::bf16, DType::f16});
  const LinearShape shape{x.shape[0], x.shape[1], w.shape[0]};
  check.shape("w", w, {shape.out, shape.in});
  check.shape("y", y, {shape.rows, shape.out});
  check.tensor("bias", bias, {DType::f32});
  check.shape("bias", bias, {shape.out});
  if (y.dtype != DType::f32) {
    // A 16-bit y has x's dtype: a GEMM's 16-bit output follows its inputs (gemm_contract.hpp).
    check.require(y.dtype == x.dtype, std::string("y is ") + y.describe() + "; a 16-bit y must have the dtype of x (" +
                                          loom::dtype_name(x.dtype) + "), or be f32");
    check.tensor("y", y, {DType::bf16, DType::f16});  // a 16-bit y is the cast's output: contiguous
    check.tensor("scratch", scratch, {DType::f32});
    check.shape("scratch", scratch, {shape.rows, shape.out});
  }
  return shape;
}

/// The unfused passes for an f32 y whose rows have a stride of their own (bias_add needs
/// contiguous rows): the bias broadcast into y by a stride-0 copy, then the product accumulated
/// onto it (gemm with beta = 1). `Ops` is the backend: anything with copy and gemm.
template <typename Ops>
void linear_bias_into_strided_rows(Ops& ops, const loom::Tensor& x, const loom::Tensor& w, const loom::Tensor& bias,
                                   const loom::Tensor& y) {
  loom::Tensor rows = bias;
  rows.ndim = 2;
  rows.shape[0] = y.shape[0];
  rows.shape[1] = bias.shape[0];
  rows.strides[0] = 0;
  rows.strides[1] = bias.strides[0];
  ops.copy(rows, y);
  ops.gemm(x, false, w, true, y, 1.0f, 1.0f);
}

}  // namespace loom_backend
