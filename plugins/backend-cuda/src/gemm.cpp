// gemm: validation of the strided (batched) matrix views as backend/cpu does, then the mapping of
// Loom's row-major product onto cuBLASLt's column-major one (cublaslt_gemm.cpp).
//
// A row-major [R, C] matrix with row stride ld is the column-major [C, R] matrix with leading
// dimension ld, so c = op(a)·op(b) is computed as cᵀ = op(b)ᵀ·op(a)ᵀ: cuBLASLt's A is our b (with
// our transpose_b), its B is our a (with transpose_a), and m = N, n = M. Two batch dimensions are
// flattened into one strided batch when every operand's strides allow it; otherwise the outer one
// is a host loop.
#include "cublaslt_gemm.hpp"
#include "cuda_backend.hpp"

namespace loom_cuda {
namespace {

struct StoredMatrix {
  int64_t rows, cols, ld;
};

StoredMatrix stored_matrix(const CudaArgumentChecks& check, const char* name, const loom::Tensor& t) {
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

cudaDataType_t cuda_type(DType dtype) {
  return dtype == DType::bf16 ? CUDA_R_16BF : dtype == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
}

/// The single batch stride of dims (0, 1) of `t` seen as one dimension, or false when the two
/// dims cannot be merged (stride0 ≠ stride1·extent1 with both extents > 1).
bool merged_stride(const loom::Tensor& t, int64_t& stride) {
  if (t.shape[1] == 1) {
    stride = t.strides[0];
    return true;
  }
  if (t.shape[0] == 1 || t.strides[0] == t.strides[1] * t.shape[1]) {
    stride = t.strides[1];
    return true;
  }
  return false;
}

}  // namespace

void CudaBackend::gemm(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
                       const loom::Tensor& c, float alpha, float beta) {
  const auto check = checks("gemm");
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
  const StoredMatrix sa = stored_matrix(check, "a", a), sb = stored_matrix(check, "b", b),
                     sc = stored_matrix(check, "c", c);
  const int64_t m = transpose_a ? sa.cols : sa.rows;
  const int64_t k = transpose_a ? sa.rows : sa.cols;
  const int64_t n = transpose_b ? sb.rows : sb.cols;
  const int64_t kb = transpose_b ? sb.cols : sb.rows;
  check.require(kb == k, "inner dimensions differ: op(a) is [" + std::to_string(m) + ", " +
                             std::to_string(k) + "], op(b) is [" + std::to_string(kb) + ", " +
                             std::to_string(n) + "]");
  check.require(sc.rows == m && sc.cols == n, "c " + c.describe() + " must be [" + std::to_string(m) + ", " +
                                                  std::to_string(n) + "] in its last two dimensions");
  const int batch_dims = a.ndim - 2;
  int64_t batches = 1;
  for (int d = 0; d < batch_dims; ++d) {
    check.require(a.shape[d] == c.shape[d] && b.shape[d] == c.shape[d],
                  "batch extents differ: a " + a.describe() + ", b " + b.describe() + ", c " + c.describe());
    check.require(c.strides[d] != 0 || c.shape[d] == 1,
                  "c " + c.describe() + " cannot have a 0 batch stride");
    batches *= c.shape[d];
  }
  if (m == 0 || n == 0 || batches == 0) return;
  if (k == 0) {  // an empty sum: c = beta·c (beta = 0 never reads c)
    scale_strided(c, beta);
    return;
  }

  ColumnMajorGemm p;
  p.ab_type = cuda_type(a.dtype);
  p.c_type = cuda_type(c.dtype);
  p.compute = a.dtype == DType::f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  p.transpose_a = transpose_b;
  p.transpose_b = transpose_a;
  p.m = n;
  p.n = m;
  p.k = k;
  p.lda = sb.ld;
  p.ldb = sa.ld;
  p.ldc = sc.ld;
  p.alpha = alpha;
  p.beta = beta;
  const size_t ab_size = loom::dtype_size(a.dtype), c_size = loom::dtype_size(c.dtype);

  // Batch layout: none, one dim, two dims merged, or the outer of two dims looped on the host.
  int64_t outer = 1, outer_a = 0, outer_b = 0, outer_c = 0;
  if (batch_dims == 1) {
    p.batch = c.shape[0];
    p.stride_a = b.strides[0];
    p.stride_b = a.strides[0];
    p.stride_c = c.strides[0];
  } else if (batch_dims == 2) {
    int64_t sa_merged = 0, sb_merged = 0, sc_merged = 0;
    if (merged_stride(a, sa_merged) && merged_stride(b, sb_merged) && merged_stride(c, sc_merged)) {
      p.batch = c.shape[0] * c.shape[1];
      p.stride_a = sb_merged;
      p.stride_b = sa_merged;
      p.stride_c = sc_merged;
    } else {
      outer = c.shape[0];
      outer_a = a.strides[0];
      outer_b = b.strides[0];
      outer_c = c.strides[0];
      p.batch = c.shape[1];
      p.stride_a = b.strides[1];
      p.stride_b = a.strides[1];
      p.stride_c = c.strides[1];
    }
  }
  if (p.batch == 1) p.stride_a = p.stride_b = p.stride_c = 0;
  check.require(p.batch <= 2147483647, "too many batched matrices");
  for (int64_t i = 0; i < outer; ++i) {
    p.a = static_cast<const char*>(b.data) + i * outer_b * static_cast<int64_t>(ab_size);
    p.b = static_cast<const char*>(a.data) + i * outer_a * static_cast<int64_t>(ab_size);
    p.c = static_cast<char*>(c.data) + i * outer_c * static_cast<int64_t>(c_size);
    gemm_->run(p);
  }
}

}  // namespace loom_cuda
