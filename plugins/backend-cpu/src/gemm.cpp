// gemm: validation of the strided (batched) matrix views, then oneDNN (onednn_gemm.cpp); f16
// operands, and bf16 ones on a CPU where oneDNN has no bf16 matmul, go through widened_gemm.cpp.
#include "cpu_backend.hpp"
#include "loom_backend/gemm_contract.hpp"
#include "onednn_gemm.hpp"

namespace loom_cpu {

void CpuBackend::gemm(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
                      const loom::Tensor& c, float alpha, float beta) {
  const auto check = checks("gemm");
  const loom_backend::GemmOperands stored = loom_backend::check_gemm_operands(check, a, b, c);
  if (a.dtype == DType::f16 || (a.dtype == DType::bf16 && !gemm_->native_bf16())) {
    // widened to f32, then back through this function
    gemm_widening(a, transpose_a, b, transpose_b, c, alpha, beta);
    return;
  }
  const loom_backend::GemmProduct product =
      loom_backend::check_gemm_product(check, stored, a, transpose_a, b, transpose_b, c);
  const loom_backend::StoredMatrix &sa = stored.a, &sb = stored.b, &sc = stored.c;
  GemmProblem p;
  p.m = product.m;
  p.k = product.k;
  p.n = product.n;
  p.batch_dims = product.batch_dims;
  for (int d = 0; d < p.batch_dims; ++d) {
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
