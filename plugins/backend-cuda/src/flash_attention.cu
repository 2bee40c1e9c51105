// Launches of the Tensor-Core attention kernels: one __global__ per block body, grid (⌈T/64⌉, B·H),
// 128 threads, the body's dynamic shared memory (above the default 48 KiB for most variants). A
// packed call launches each body once over all its sequences (flash_packed.cuh): grid
// (S·H, ⌈max L/64⌉), the sequences and heads on x, which has room for any count of them.
#include "flash_attention.hpp"

#include <atomic>
#include <cstdint>

#include "cuda_check.hpp"
#include "flash_attention_backward.cuh"
#include "flash_attention_delta.cuh"
#include "flash_attention_forward.cuh"
#include "flash_packed.cuh"

namespace loom_cuda {
namespace {

using flash::HeadRows;

template <typename Body, typename Args>
__global__ void __launch_bounds__(Body::kThreads) flash_attention_kernel(const Args args) {
  extern __shared__ __align__(16) unsigned char shared[];
  Body::run(args, shared, static_cast<int>(blockIdx.x), static_cast<int64_t>(blockIdx.y),
            static_cast<int>(threadIdx.x));
}

template <typename Body, typename Args>
__global__ void __launch_bounds__(Body::kThreads) flash_packed_attention_kernel(const flash::PackedArgs<Args> args) {
  extern __shared__ __align__(16) unsigned char shared[];
  flash::Packed<Body>::run(args, shared, static_cast<int>(blockIdx.y), static_cast<int64_t>(blockIdx.x),
                           static_cast<int>(threadIdx.x));
}

/// Each sequence's first dropout element (flash_packed.cuh), one thread per sequence: O(S) reads
/// each, trivial next to the attention launches for the few hundred sequences a batch holds.
__global__ void packed_first_elements_kernel(const int32_t* starts, int64_t sequences, int64_t heads,
                                             uint64_t* first_elements) {
  const int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s < sequences) first_elements[s] = flash::first_dropout_element(starts, s, heads);
}

/// Raises the kernel's dynamic shared memory limit to what Body needs, once per device.
template <typename Body, typename Kernel>
void allow_shared_memory(Kernel kernel, const char* what) {
  if constexpr (Body::kSharedBytes > 48 * 1024) {
    // The limit is raised once per device (a bit each of up to 64), not at every launch.
    static std::atomic<uint64_t> raised{0};
    int device = 0;
    cuda_check(cudaGetDevice(&device), what);
    const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
    if (bit == 0 || (raised.load() & bit) == 0) {
      cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Body::kSharedBytes),
                 what);
      raised.fetch_or(bit);
    }
  }
}

template <typename Body, typename Args>
void launch(const Args& args, const AttentionShape& shape, cudaStream_t stream, const char* what) {
  const auto kernel = flash_attention_kernel<Body, Args>;
  allow_shared_memory<Body>(kernel, what);
  const dim3 grid(static_cast<unsigned>((shape.seq + 63) / 64),
                  static_cast<unsigned>(shape.batch * shape.heads));
  kernel<<<grid, Body::kThreads, Body::kSharedBytes, stream>>>(args);
}

template <typename Body, typename Args>
void launch_packed(const Args& args, const flash::PackedSequences& packed, int64_t max_sequence,
                   cudaStream_t stream, const char* what) {
  const auto kernel = flash_packed_attention_kernel<Body, Args>;
  allow_shared_memory<Body>(kernel, what);
  const dim3 grid(static_cast<unsigned>(packed.sequences * packed.heads),
                  static_cast<unsigned>((max_sequence + 63) / 64));
  kernel<<<grid, Body::kThreads, Body::kSharedBytes, stream>>>(flash::PackedArgs<Args>{args, packed});
}

/// The packed call's sequences for the kernels, its first dropout elements made first when it has
/// dropout.
flash::PackedSequences packed_sequences(const PackedLaunch& launch, const AttentionShape& shape,
                                        cudaStream_t stream) {
  flash::PackedSequences packed{launch.starts, nullptr, launch.sequences, shape.heads, launch.window};
  if (shape.dropout) {
    constexpr int kThreads = 128;
    packed_first_elements_kernel<<<static_cast<unsigned>((launch.sequences + kThreads - 1) / kThreads), kThreads,
                                   0, stream>>>(launch.starts, launch.sequences, shape.heads,
                                                launch.first_elements);
    packed.first_elements = launch.first_elements;
  }
  return packed;
}

template <typename T>
HeadRows<T> rows(const loom::Tensor& t) {
  return HeadRows<T>{static_cast<T*>(t.data), t.strides[0], t.strides[1], t.strides[2]};
}

/// Rows 16-byte aligned: the base address and every outer stride (in bytes) multiples of 16.
bool rows_aligned(const loom::Tensor& t) {
  const auto bytes = static_cast<int64_t>(loom::dtype_size(t.dtype));
  return reinterpret_cast<uintptr_t>(t.data) % 16 == 0 && t.strides[3] == 1 &&
         (t.strides[0] * bytes) % 16 == 0 && (t.strides[1] * bytes) % 16 == 0 &&
         (t.strides[2] * bytes) % 16 == 0;
}

template <typename Fn>
void with_head_dim(int64_t head_dim, Fn&& fn) {
  if (head_dim == 64)
    fn(std::integral_constant<int, 64>{});
  else
    fn(std::integral_constant<int, 128>{});
}

/// The forward's kernel for head dimension 64 or 128 and its arguments, handed to
/// `launch(body, args)` (a Body value names the kernel): one code makes them for the padded
/// launch and the packed one.
template <typename S, typename Launch>
void forward_kernel(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v, const float* mask,
                    const uint8_t* empty_bands, const AttentionShape& shape, const loom::Tensor& ctx, float* lse,
                    Launch&& launch) {
  with_head_dim(shape.head_dim, [&](auto head_dim) {
    constexpr int kD = decltype(head_dim)::value;
    launch(flash::Forward<S, kD>{}, flash::ForwardArgs<S>{rows<const S>(q), rows<const S>(k), rows<const S>(v),
                                                           rows<S>(ctx), lse, mask, empty_bands, shape});
  });
}

/// The backward's three kernels in order (δ, dK/dV, dQ) and their arguments, likewise.
template <typename S, typename G, typename Launch>
void backward_kernels(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                      const loom::Tensor& ctx, const float* lse, float* delta, const float* mask,
                      const uint8_t* empty_bands, const AttentionShape& shape, const loom::Tensor& dq,
                      const loom::Tensor& dk, const loom::Tensor& dv, Launch&& launch) {
  with_head_dim(shape.head_dim, [&](auto head_dim) {
    constexpr int kD = decltype(head_dim)::value;
    launch(flash::RowDeltas<S, G, kD>{}, flash::DeltaArgs<S, G>{rows<const G>(d_ctx), rows<const S>(ctx), delta, shape});
    const flash::BackwardArgs<S, G> args{rows<const S>(q),     rows<const S>(k), rows<const S>(v),
                                         rows<const G>(d_ctx), lse,              delta,
                                         mask,                 empty_bands,      rows<float>(dq),
                                         rows<float>(dk),      rows<float>(dv),  shape};
    launch(flash::KeyGrads<S, G, kD>{}, args);
    launch(flash::QueryGrads<S, G, kD>{}, args);
  });
}

}  // namespace

bool flash_attention_serves(const AttentionShape& shape, const loom::Tensor& q, const loom::Tensor& k,
                            const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& d_ctx) {
  if (q.dtype != loom::DType::bf16 && q.dtype != loom::DType::f16) return false;
  if (shape.head_dim != 64 && shape.head_dim != 128) return false;
  if (!rows_aligned(q) || !rows_aligned(k) || !rows_aligned(v) || !rows_aligned(ctx)) return false;
  return !d_ctx.defined() || rows_aligned(d_ctx);
}

template <typename S>
void flash_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                             const float* mask, const uint8_t* empty_bands, const AttentionShape& shape,
                             const loom::Tensor& ctx, float* lse, cudaStream_t stream) {
  forward_kernel<S>(q, k, v, mask, empty_bands, shape, ctx, lse, [&](auto body, const auto& args) {
    launch<decltype(body)>(args, shape, stream, "attention_forward: cudaFuncSetAttribute");
  });
}

template <typename S, typename G>
void flash_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                              const loom::Tensor& v, const loom::Tensor& ctx, const float* lse, float* delta,
                              const float* mask, const uint8_t* empty_bands, const AttentionShape& shape,
                              const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                              cudaStream_t stream) {
  backward_kernels<S, G>(d_ctx, q, k, v, ctx, lse, delta, mask, empty_bands, shape, dq, dk, dv,
                         [&](auto body, const auto& args) {
                           launch<decltype(body)>(args, shape, stream, "attention_backward: cudaFuncSetAttribute");
                         });
}

template <typename S>
void flash_packed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                    const PackedLaunch& launch, const AttentionShape& shape,
                                    const loom::Tensor& ctx, float* lse, cudaStream_t stream) {
  const flash::PackedSequences packed = packed_sequences(launch, shape, stream);
  forward_kernel<S>(q, k, v, nullptr, nullptr, shape, ctx, lse, [&](auto body, const auto& args) {
    launch_packed<decltype(body)>(args, packed, launch.max_sequence, stream,
                                  "packed_attention_forward: cudaFuncSetAttribute");
  });
}

template <typename S, typename G>
void flash_packed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                     const loom::Tensor& v, const loom::Tensor& ctx, const float* lse,
                                     float* delta, const PackedLaunch& launch, const AttentionShape& shape,
                                     const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                     cudaStream_t stream) {
  const flash::PackedSequences packed = packed_sequences(launch, shape, stream);
  backward_kernels<S, G>(d_ctx, q, k, v, ctx, lse, delta, nullptr, nullptr, shape, dq, dk, dv,
                         [&](auto body, const auto& args) {
                           launch_packed<decltype(body)>(args, packed, launch.max_sequence, stream,
                                                         "packed_attention_backward: cudaFuncSetAttribute");
                         });
}

// The storages flash_attention_serves admits, as the attention ops' dtype dispatch reaches them
// (attention_forward.cu, attention_backward.cu): q in bf16 or f16, d_ctx in f32 or q's dtype.
#define LOOM_FLASH_ATTENTION(S)                                                                           \
  template void flash_attention_forward<S>(const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, \
                                           const float*, const uint8_t*, const AttentionShape&,           \
                                           const loom::Tensor&, float*, cudaStream_t);                    \
  template void flash_attention_backward<S, float>(                                                       \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, const loom::Tensor&,                 \
      const loom::Tensor&, const float*, float*, const float*, const uint8_t*, const AttentionShape&,     \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, cudaStream_t);                       \
  template void flash_attention_backward<S, S>(                                                           \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, const loom::Tensor&,                 \
      const loom::Tensor&, const float*, float*, const float*, const uint8_t*, const AttentionShape&,     \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, cudaStream_t);                       \
  template void flash_packed_attention_forward<S>(const loom::Tensor&, const loom::Tensor&,               \
                                                  const loom::Tensor&, const PackedLaunch&,               \
                                                  const AttentionShape&, const loom::Tensor&, float*,     \
                                                  cudaStream_t);                                          \
  template void flash_packed_attention_backward<S, float>(                                                \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, const loom::Tensor&,                 \
      const loom::Tensor&, const float*, float*, const PackedLaunch&, const AttentionShape&,              \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, cudaStream_t);                       \
  template void flash_packed_attention_backward<S, S>(                                                    \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, const loom::Tensor&,                 \
      const loom::Tensor&, const float*, float*, const PackedLaunch&, const AttentionShape&,              \
      const loom::Tensor&, const loom::Tensor&, const loom::Tensor&, cudaStream_t);
LOOM_FLASH_ATTENTION(loom::BFloat16)
LOOM_FLASH_ATTENTION(loom::Half)
#undef LOOM_FLASH_ATTENTION

}  // namespace loom_cuda
