// gemm with 16-bit operands oneDNN cannot multiply on this CPU. oneDNN 2.6 (Debian's) has no f16
// matmul on CPU — it cannot create the primitive even on AVX512-FP16 machines — and no bf16 matmul
// without AVX-512 (an AVX2-only CPU such as AMD Zen 3 fails with "could not create a primitive
// descriptor iterator"; OneDnnGemm::native_bf16 probes it once). Both operands are then widened to
// f32 (exactly: every f16 and bf16 is an f32) and multiplied by the f32 path. That is the
// arithmetic of 16-bit tensor-core GEMMs and of oneDNN's bf16 kernels: 16-bit inputs, f32
// accumulation; a 16-bit c is rounded once, at the end. The widened copies live in buffers that
// grow to the largest product and are then reused, so steady-state steps allocate nothing. The
// widening passes cost O(M·K + K·N) each against the product's O(M·N·K): a few per cent of a
// BERT-sized linear layer, about 15% at 128 tokens (docs/performance.md, inference).
#include <algorithm>

#include "cpu_backend.hpp"
#include "float_storage.hpp"

namespace loom_cpu {
namespace {

/// Rows of `t` (every index but the last), each with the element offset of its first column.
struct RowWalk {
  int64_t rows = 1, cols = 1;
  const loom::Tensor* t;

  explicit RowWalk(const loom::Tensor& tensor) : t(&tensor) {
    cols = tensor.ndim > 0 ? tensor.shape[tensor.ndim - 1] : 1;
    for (int d = 0; d + 1 < tensor.ndim; ++d) rows *= tensor.shape[d];
  }
  int64_t offset(int64_t row) const {
    int64_t off = 0;
    for (int d = t->ndim - 2; d >= 0; --d) {
      off += (row % t->shape[d]) * t->strides[d];
      row /= t->shape[d];
    }
    return off;
  }
};

/// `dense` (f32, row-major, same shape) = `t` (16-bit S with unit last stride).
template <typename S>
void widen(const loom::Tensor& t, float* dense, int threads) {
  const RowWalk walk(t);
  const auto* src = static_cast<const S*>(t.data);
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (walk.rows * walk.cols > kParallelMinElements)
  for (int64_t r = 0; r < walk.rows; ++r) {
    const S* row = src + walk.offset(r);
    float* out = dense + r * walk.cols;
#pragma omp simd
    for (int64_t j = 0; j < walk.cols; ++j) out[j] = load(row, j);
  }
}

/// `t` (16-bit S with unit last stride) = `dense` (f32, row-major, same shape), rounded to nearest
/// even.
template <typename S>
void narrow(const float* dense, const loom::Tensor& t, int threads) {
  const RowWalk walk(t);
  auto* dst = static_cast<S*>(t.data);
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (walk.rows * walk.cols > kParallelMinElements)
  for (int64_t r = 0; r < walk.rows; ++r) {
    S* row = dst + walk.offset(r);
    const float* in = dense + r * walk.cols;
#pragma omp simd
    for (int64_t j = 0; j < walk.cols; ++j) store(row, j, in[j]);
  }
}

/// A row-major f32 tensor of `t`'s shape over `buffer`, grown when too small.
loom::Tensor dense_f32_like(const loom::Tensor& t, std::vector<float>& buffer) {
  const auto n = static_cast<size_t>(t.numel());
  if (buffer.size() < n) buffer.resize(n);
  loom::Tensor dense = t;
  dense.data = buffer.data();
  dense.dtype = DType::f32;
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    dense.strides[d] = stride;
    stride *= t.shape[d];
  }
  return dense;
}

/// widen / narrow for the 16-bit dtype `dtype` (bf16 or f16).
void widen(DType dtype, const loom::Tensor& t, float* dense, int threads) {
  if (dtype == DType::bf16)
    widen<BFloat16>(t, dense, threads);
  else
    widen<Half>(t, dense, threads);
}
void narrow(DType dtype, const float* dense, const loom::Tensor& t, int threads) {
  if (dtype == DType::bf16)
    narrow<BFloat16>(dense, t, threads);
  else
    narrow<Half>(dense, t, threads);
}

}  // namespace

void CpuBackend::gemm_widening(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
                               const loom::Tensor& c, float alpha, float beta) {
  // gemm() validated the views (unit last stride, a and b of one dtype) before calling here.
  const loom::Tensor a32 = dense_f32_like(a, widened_[0]), b32 = dense_f32_like(b, widened_[1]);
  widen(a.dtype, a, static_cast<float*>(a32.data), threads_);
  widen(b.dtype, b, static_cast<float*>(b32.data), threads_);
  if (c.dtype == DType::f32) {
    gemm(a32, transpose_a, b32, transpose_b, c, alpha, beta);
    return;
  }
  const loom::Tensor c32 = dense_f32_like(c, widened_[2]);
  if (beta != 0.0f) widen(c.dtype, c, static_cast<float*>(c32.data), threads_);
  gemm(a32, transpose_a, b32, transpose_b, c32, alpha, beta);
  narrow(c.dtype, static_cast<const float*>(c32.data), c, threads_);
}

}  // namespace loom_cpu
