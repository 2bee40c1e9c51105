// The argument contract of gemm, c = alpha·op(a)·op(b) + beta·c on strided (batched) matrix views,
// shared by backend/cpu and backend/cuda. In two steps, because backend/cpu widens f16 operands
// between them (the widened views go through the whole of gemm again).
#pragma once

#include <cstdint>
#include <string>

#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

/// Geometry of one stored operand: its two matrix extents and its row stride.
struct StoredMatrix {
  int64_t rows, cols, ld;
};

/// The three operands as stored, before any transpose.
struct GemmOperands {
  StoredMatrix a, b, c;
};

/// The product: op(a) is [m, k], op(b) [k, n], c [m, n], under `batch_dims` (0 to 2) batch
/// dimensions of `batches` matrices in all.
struct GemmProduct {
  int64_t m, n, k;
  int batch_dims;
  int64_t batches;
};

namespace detail {
/// The matrix of `t`'s last two dimensions: unit column stride, rows at least a row apart.
inline StoredMatrix stored_matrix(const ArgumentChecks& check, const char* name, const loom::Tensor& t) {
  const int64_t rows = t.shape[t.ndim - 2], cols = t.shape[t.ndim - 1];
  const int64_t col_stride = t.strides[t.ndim - 1], row_stride = t.strides[t.ndim - 2];
  check.require(cols <= 1 || col_stride == 1, std::string(name) + " " + t.describe() +
                                                  " must have stride 1 in its last dimension (has " +
                                                  std::to_string(col_stride) + ")");
  const int64_t ld = rows <= 1 ? (cols > 0 ? cols : 1) : row_stride;
  check.require(ld >= cols && ld >= 1, std::string(name) + " " + t.describe() + " has row stride " +
                                           std::to_string(row_stride) + " < its " + std::to_string(cols) +
                                           " columns");
  return {rows, cols, ld};
}
}  // namespace detail

/// Step 1: where the operands live, their ranks, dtypes (f32, bf16 or f16 inputs; an f32 c or
/// one of the inputs' dtype) and stored layouts.
inline GemmOperands check_gemm_operands(const ArgumentChecks& check, const loom::Tensor& a,
                                        const loom::Tensor& b, const loom::Tensor& c) {
  for (const auto* t : {&a, &b, &c}) {
    const char* name = t == &a ? "a" : t == &b ? "b" : "c";
    check.on_device(name, *t);
    check.require(t->ndim >= 2 && t->ndim <= 4,
                  std::string(name) + " " + t->describe() + " must have 2 to 4 dimensions (≤ 2 batch dims)");
  }
  check.require(a.ndim == b.ndim && b.ndim == c.ndim, "a " + a.describe() + ", b " + b.describe() +
                                                          " and c " + c.describe() +
                                                          " need the same number of dimensions");
  check.require(a.dtype == b.dtype, "a " + a.describe() + " and b " + b.describe() + " need the same dtype");
  if (a.dtype == DType::f32)
    check.require(c.dtype == DType::f32, "f32 inputs need an f32 c, got " + c.describe());
  else if (a.dtype == DType::bf16)
    check.require(c.dtype == DType::f32 || c.dtype == DType::bf16,
                  "bf16 inputs need an f32 or bf16 c, got " + c.describe());
  else if (a.dtype == DType::f16)
    check.require(c.dtype == DType::f32 || c.dtype == DType::f16,
                  "f16 inputs need an f32 or f16 c, got " + c.describe());
  else
    check.fail(std::string("inputs must be f32, bf16 or f16, got ") + loom::dtype_name(a.dtype));
  return {detail::stored_matrix(check, "a", a), detail::stored_matrix(check, "b", b),
          detail::stored_matrix(check, "c", c)};
}

/// Step 2: the extents of op(a), op(b) and c agree, and so do the batch extents; c's batch
/// dimensions do not overlap (no 0 stride over more than one matrix).
inline GemmProduct check_gemm_product(const ArgumentChecks& check, const GemmOperands& stored,
                                      const loom::Tensor& a, bool transpose_a, const loom::Tensor& b,
                                      bool transpose_b, const loom::Tensor& c) {
  GemmProduct p;
  p.m = transpose_a ? stored.a.cols : stored.a.rows;
  p.k = transpose_a ? stored.a.rows : stored.a.cols;
  p.n = transpose_b ? stored.b.rows : stored.b.cols;
  const int64_t kb = transpose_b ? stored.b.cols : stored.b.rows;
  check.require(kb == p.k, "inner dimensions differ: op(a) is [" + std::to_string(p.m) + ", " +
                               std::to_string(p.k) + "], op(b) is [" + std::to_string(kb) + ", " +
                               std::to_string(p.n) + "]");
  check.require(stored.c.rows == p.m && stored.c.cols == p.n,
                "c " + c.describe() + " must be [" + std::to_string(p.m) + ", " + std::to_string(p.n) +
                    "] in its last two dimensions");
  p.batch_dims = a.ndim - 2;
  p.batches = 1;
  for (int d = 0; d < p.batch_dims; ++d) {
    check.require(a.shape[d] == c.shape[d] && b.shape[d] == c.shape[d],
                  "batch extents differ: a " + a.describe() + ", b " + b.describe() + ", c " + c.describe());
    check.require(c.strides[d] != 0 || c.shape[d] == 1,
                  "c " + c.describe() + " cannot have a 0 batch stride");
    p.batches *= c.shape[d];
  }
  return p;
}

}  // namespace loom_backend
