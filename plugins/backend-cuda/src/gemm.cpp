// gemm and linear_bias_forward (LinearBias), the two ways into cuBLASLt: validation of the strided
// (batched) matrix views (loom_backend/gemm_contract.hpp, shared with backend/cpu), then the
// mapping of Loom's row-major product onto cuBLASLt's column-major one.
//
// A row-major [R, C] matrix with row stride ld is the column-major [C, R] matrix with leading
// dimension ld, so c = op(a)·op(b) is computed as cᵀ = op(b)ᵀ·op(a)ᵀ: cuBLASLt's A is our b (with
// our transpose_b), its B is our a (with transpose_a), and m = N, n = M. Two batch dimensions are
// flattened into one strided batch when every operand's strides allow it; otherwise the outer one
// is a host loop.
//
// linear_bias_forward is one product with cuBLASLt's BIAS epilogue (an f32 bias added to the f32
// sum before the one rounding to y's type); when cuBLASLt has no algorithm for that epilogue at a
// shape, or the product is empty, it runs gemm into f32, bias_add and cast instead (an f32 y with a
// row stride of its own: the bias broadcast into y, then the product accumulated onto it).
#include "cublaslt_gemm.hpp"
#include "cuda_backend.hpp"
#include "loom_backend/gemm_contract.hpp"
#include "loom_backend/linear_bias_contract.hpp"

namespace loom_cuda {
namespace {

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

ColumnMajorGemm CudaBackend::column_major(DType ab, bool transpose_a, bool transpose_b, DType c,
                                          const loom_backend::GemmProduct& product, int64_t lda, int64_t ldb,
                                          int64_t ldc) const {
  ColumnMajorGemm p;
  p.ab_type = cuda_type(ab);
  p.c_type = cuda_type(c);
  p.compute = ab == DType::f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  p.transpose_a = transpose_b;
  p.transpose_b = transpose_a;
  p.m = product.n;
  p.n = product.m;
  p.k = product.k;
  p.lda = ldb;
  p.ldb = lda;
  p.ldc = ldc;
  return p;
}

void CudaBackend::gemm(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
                       const loom::Tensor& c, float alpha, float beta) {
  const auto check = checks("gemm");
  const loom_backend::GemmOperands stored = loom_backend::check_gemm_operands(check, a, b, c);
  const loom_backend::GemmProduct product =
      loom_backend::check_gemm_product(check, stored, a, transpose_a, b, transpose_b, c);
  const loom_backend::StoredMatrix& sc = stored.c;
  const int64_t m = product.m, n = product.n, k = product.k;
  const int batch_dims = product.batch_dims;
  const int64_t batches = product.batches;
  if (m == 0 || n == 0 || batches == 0) return;
  if (k == 0) {  // an empty sum: c = beta·c (beta = 0 never reads c)
    scale_strided(c, beta);
    return;
  }

  ColumnMajorGemm p = column_major(a.dtype, transpose_a, transpose_b, c.dtype, product, stored.a.ld, stored.b.ld, sc.ld);
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


void CudaBackend::linear_bias_forward(const loom::Tensor& x, const loom::Tensor& w, const loom::Tensor& bias,
                                      const loom::Tensor& y, const loom::Tensor& scratch) {
  const auto check = checks("linear_bias_forward");
  const loom_backend::LinearShape shape = loom_backend::check_linear_bias_forward(check, x, w, bias, y, scratch);
  const loom_backend::GemmOperands stored = loom_backend::check_gemm_operands(check, x, w, y);
  const loom_backend::GemmProduct product = loom_backend::check_gemm_product(check, stored, x, false, w, true, y);
  if (shape.rows == 0 || shape.out == 0) return;
  if (shape.in > 0) {
    ColumnMajorGemm p = column_major(x.dtype, false, true, y.dtype, product, stored.a.ld, stored.b.ld, stored.c.ld);
    p.a = w.data;
    p.b = x.data;
    p.c = y.data;
    p.bias = static_cast<const float*>(bias.data);
    if (gemm_->run_with_bias(p)) {
      ++fused_linear_bias_calls_;
      return;
    }
  }
  if (y.dtype == DType::f32 && !y.is_contiguous()) {
    loom_backend::linear_bias_into_strided_rows(*this, x, w, bias, y);
    return;
  }
  const loom::Tensor& sum = y.dtype == DType::f32 ? y : scratch;
  gemm(x, false, w, true, sum, 1.0f, 0.0f);
  bias_add(sum, bias);
  if (sum.data != y.data) cast(sum, y);
}

}  // namespace loom_cuda
