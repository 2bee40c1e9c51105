// gemm: validation of the strided (batched) matrix views, then oneDNN (onednn_gemm.cpp); f16
// operands go through f16_gemm.cpp.
#include "argument_checks.hpp"
#include "cpu_backend.hpp"
#include "onednn_gemm.hpp"

namespace loom_cpu {
namespace {

/// Geometry of one stored operand: its two matrix extents and its row stride.
struct StoredMatrix {
  int64_t rows, cols, ld;
};

StoredMatrix stored_matrix(const ArgumentChecks& check, const char* name, const loom::Tensor& t) {
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

}  // namespace

void CpuBackend::gemm(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
                      const loom::Tensor& c, float alpha, float beta) {
  const ArgumentChecks check("gemm");
  for (const auto* t : {&a, &b, &c}) {
    const char* name = t == &a ? "a" : t == &b ? "b" : "c";
    check.require(t->defined() || t->numel() == 0, std::string(name) + " is absent");
    check.require(t->device.type == loom::DeviceType::cpu, std::string(name) + " is not in CPU memory");
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

  const StoredMatrix sa = stored_matrix(check, "a", a), sb = stored_matrix(check, "b", b),
                     sc = stored_matrix(check, "c", c);
  if (a.dtype == DType::f16) {  // widened to f32, then back through this function
    gemm_widening_f16(a, transpose_a, b, transpose_b, c, alpha, beta);
    return;
  }
  GemmProblem p;
  p.m = transpose_a ? sa.cols : sa.rows;
  p.k = transpose_a ? sa.rows : sa.cols;
  p.n = transpose_b ? sb.rows : sb.cols;
  const int64_t kb = transpose_b ? sb.cols : sb.rows;
  check.require(kb == p.k, "inner dimensions differ: op(a) is [" + std::to_string(p.m) + ", " +
                               std::to_string(p.k) + "], op(b) is [" + std::to_string(kb) + ", " +
                               std::to_string(p.n) + "]");
  check.require(sc.rows == p.m && sc.cols == p.n, "c " + c.describe() + " must be [" + std::to_string(p.m) +
                                                      ", " + std::to_string(p.n) +
                                                      "] in its last two dimensions");
  p.batch_dims = a.ndim - 2;
  for (int d = 0; d < p.batch_dims; ++d) {
    check.require(a.shape[d] == c.shape[d] && b.shape[d] == c.shape[d],
                  "batch extents differ: a " + a.describe() + ", b " + b.describe() + ", c " + c.describe());
    check.require(c.strides[d] != 0 || c.shape[d] == 1,
                  "c " + c.describe() + " cannot have a 0 batch stride");
    p.batch[d] = c.shape[d];
    p.a_strides[d] = a.strides[d];
    p.b_strides[d] = b.strides[d];
    p.c_strides[d] = c.strides[d];
  }
  const int nd = a.ndim;
  p.transpose_a = transpose_a;
  p.transpose_b = transpose_b;
  p.lda = sa.ld;
  p.ldb = sb.ld;
  p.ldc = sc.ld;
  p.a_strides[nd - 2] = transpose_a ? 1 : sa.ld;
  p.a_strides[nd - 1] = transpose_a ? sa.ld : 1;
  p.b_strides[nd - 2] = transpose_b ? 1 : sb.ld;
  p.b_strides[nd - 1] = transpose_b ? sb.ld : 1;
  p.c_strides[nd - 2] = sc.ld;
  p.c_strides[nd - 1] = 1;
  p.input_dtype = a.dtype;
  p.output_dtype = c.dtype;
  p.a = a.data;
  p.b = b.data;
  p.c = c.data;
  p.alpha = alpha;
  p.beta = beta;
  if (p.m == 0 || p.n == 0 || p.batch[0] * p.batch[1] == 0) return;
  if (p.k == 0) {
    // An empty sum: c = beta·c (beta = 0 must not read c, which may hold NaN).
    if (beta == 0.0f) {
      zero(c);
      return;
    }
    check.require(c.dtype == DType::f32, "an empty product (K = 0) with beta != 0 needs an f32 c");
    float* base = static_cast<float*>(c.data);
    for (int64_t i0 = 0; i0 < p.batch[0]; ++i0)
      for (int64_t i1 = 0; i1 < p.batch[1]; ++i1)
        for (int64_t m = 0; m < p.m; ++m)
          for (int64_t n = 0; n < p.n; ++n)
            base[i0 * p.c_strides[0] * (nd > 2) + i1 * p.c_strides[1] * (nd > 3) + m * sc.ld + n] *= beta;
    return;
  }
  gemm_->run(p);
}

}  // namespace loom_cpu
