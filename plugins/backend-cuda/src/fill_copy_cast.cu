// fill, zero, copy (any strides) and cast (f32/bf16/f16), plus gemm's K = 0 scaling of c.
//
// Strided views are walked element by element in row-major order, each thread decoding its
// element's multi-index (StridedLayout); dense views take the fast paths (cudaMemcpyAsync; cast
// four elements per thread in one access each way when n % 4 == 0 and both views are aligned,
// row_quads.cuh, else one per thread: the same rounding per element either way). Work is moved as
// unsigned words of the dtype's size, so copy and fill are exact for every dtype.
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "loom_backend/element_words.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "row_quads.cuh"
#include "strided_layout.cuh"

namespace loom_cuda {
namespace {

template <typename Word>
__global__ void fill_strided_kernel(Word* x, StridedLayout layout, int64_t n, Word value) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    x[layout.offset(e)] = value;
}

template <typename Word>
__global__ void copy_strided_kernel(const Word* src, StridedLayout src_layout, Word* dst,
                                    StridedLayout dst_layout, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    dst[dst_layout.offset(e)] = src[src_layout.offset(e)];
}

template <typename SI, typename SO>
__global__ void cast_kernel(const SI* src, SO* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    store(dst, i, load(src, i));
}

/// cast of quads (elements 4q .. 4q + 3): n = 4·quads, both views is_quad_aligned.
template <typename SI, typename SO>
__global__ void cast_quads_kernel(const SI* src, SO* dst, int64_t quads) {
  for (int64_t q = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; q < quads;
       q += int64_t{gridDim.x} * blockDim.x) {
    float v[4];
    load_quad(src, q, 4 * quads, true, v);
    store_quad(dst, q, 4 * quads, true, v);
  }
}

template <typename S>
__global__ void scale_strided_kernel(S* x, StridedLayout layout, int64_t n, float beta) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t at = layout.offset(e);
    store(x, at, beta * load(x, at));
  }
}

constexpr int kThreads = 256;

}  // namespace

// fill, zero and copy begin by hand, not with run_op: they move every dtype as unsigned words of
// its size (with_word), not as float storage, and the dense paths of zero and copy are a
// cudaMemsetAsync and a cudaMemcpyAsync, checked with cuda_check rather than a launch check.
void CudaBackend::fill(const loom::Tensor& x, double value) {
  const auto check = checks("fill");
  loom_backend::check_fill(check, x);
  const int64_t n = x.numel();
  if (n == 0) return;
  loom_backend::with_word(x.dtype, [&](auto word) {
    using Word = decltype(word);
    fill_strided_kernel<Word><<<grid_for(n, kThreads), kThreads, 0, stream_>>>(
        static_cast<Word*>(x.data), StridedLayout::of(x), n, loom_backend::bits_of<Word>(value, x.dtype));
  });
  check_launch("fill");
}

void CudaBackend::zero(const loom::Tensor& x) {
  if (x.is_contiguous() && x.numel() != 0) {
    const auto check = checks("zero");  // in scope until the memset is enqueued (timed as the op)
    check.on_device("x", x);
    cuda_check(cudaMemsetAsync(x.data, 0, x.nbytes(), stream_), "zero");
    return;
  }
  fill(x, 0.0);
}

void CudaBackend::copy(const loom::Tensor& src, const loom::Tensor& dst) {
  const auto check = checks("copy");
  loom_backend::check_copy(check, src, dst);
  const int64_t n = src.numel();
  if (n == 0) return;
  if (src.is_contiguous() && dst.is_contiguous()) {
    cuda_check(cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDeviceToDevice, stream_), "copy");
    return;
  }
  loom_backend::with_word(src.dtype, [&](auto word) {
    using Word = decltype(word);
    copy_strided_kernel<Word><<<grid_for(n, kThreads), kThreads, 0, stream_>>>(
        static_cast<const Word*>(src.data), StridedLayout::of(src), static_cast<Word*>(dst.data),
        StridedLayout::of(dst), n);
  });
  check_launch("copy");
}

void CudaBackend::cast(const loom::Tensor& src, const loom::Tensor& dst) {
  run_op(
      "cast",
      [&](const ArgumentChecks& check) {
        loom_backend::check_cast(check, src, dst);
        return Elements{src.numel()};
      },
      {src.dtype, dst.dtype},
      [&](Elements elements, auto s_tag, auto d_tag) {
        using SI = decltype(s_tag);
        using SO = decltype(d_tag);
        const int64_t n = elements.count;
        const auto* in = static_cast<const SI*>(src.data);
        auto* out = static_cast<SO*>(dst.data);
        if (n % 4 == 0 && is_quad_aligned<SI>(in) && is_quad_aligned<SO>(out))
          cast_quads_kernel<SI, SO><<<grid_for(n / 4, kThreads), kThreads, 0, stream_>>>(in, out, n / 4);
        else
          cast_kernel<SI, SO><<<grid_for(n, kThreads), kThreads, 0, stream_>>>(in, out, n);
      });
}

void CudaBackend::scale_strided(const loom::Tensor& c, float beta) {
  const int64_t n = c.numel();
  if (n == 0) return;
  if (beta == 0.0f) {  // beta = 0 never reads c (it may hold NaN)
    zero(c);
    return;
  }
  // Not an op with a preamble of its own: gemm's K = 0 case, run inside gemm's checks, whose
  // operands it has already validated (so the dispatch is by hand, and errors name gemm).
  with_float_storage(c.dtype, "gemm", [&](auto tag) {
    using S = decltype(tag);
    scale_strided_kernel<S><<<grid_for(n, kThreads), kThreads, 0, stream_>>>(static_cast<S*>(c.data),
                                                                             StridedLayout::of(c), n, beta);
  });
  check_launch("gemm");
}

}  // namespace loom_cuda
