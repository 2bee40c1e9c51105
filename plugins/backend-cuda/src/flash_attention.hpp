// The Tensor-Core attention kernels (flash_attention_forward.cuh, flash_attention_backward.cuh) as
// the CUDA backend launches them: which calls they serve, and the launches. attention_forward.cu
// and attention_backward.cu route a call here when flash_attention_serves says so, and to their
// f32 kernels otherwise (f32 storage, other head dimensions, views without 16-byte rows).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention_shape.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_cuda {

/// True when q, k, v (and ctx, d_ctx when given) are bf16 or f16 [B, H, T, d] views with d = 64 or
/// 128 whose rows start 16-byte aligned (the layout cp.async and ldmatrix need); d_ctx may be f32.
bool flash_attention_serves(const AttentionShape& shape, const loom::Tensor& q, const loom::Tensor& k,
                            const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& d_ctx = {});

/// ctx and lse of the forward (the call validated, flash_attention_serves true), with S the storage
/// of q, k, v and ctx (loom::BFloat16 or loom::Half; flash_attention.cu instantiates both).
/// empty_bands: the flags of rows with an empty band when shape.window ≥ 0 (attention_band.cuh),
/// or null.
template <typename S>
void flash_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                             const float* mask, const uint8_t* empty_bands, const AttentionShape& shape,
                             const loom::Tensor& ctx, float* lse, cudaStream_t stream);

/// delta = Σ d_ctx·ctx per row ([B, H, T]), then dq, dk, dv of the backward; S as above, G the
/// storage of d_ctx (float or S); empty_bands as above.
template <typename S, typename G>
void flash_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                              const loom::Tensor& v, const loom::Tensor& ctx, const float* lse, float* delta,
                              const float* mask, const uint8_t* empty_bands, const AttentionShape& shape,
                              const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                              cudaStream_t stream);

/// The sequences of a packed call (loom/sdk/ops/packed_attention.hpp) as the one-launch kernels take
/// them (flash_packed.cuh): the device starts, the raw window, the longest length, and device room
/// for S first dropout elements (made there when the call has dropout).
struct PackedLaunch {
  const int32_t* starts;
  uint64_t* first_elements;
  int64_t sequences, max_sequence, window;
};

/// flash_attention_forward over a packed call in one launch: q, k, v, ctx [1, H, N, d] views, lse
/// [1, H, N]; `shape` the call's (batch 1, seq N), each sequence's made by flash_packed.cuh.
template <typename S>
void flash_packed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                    const PackedLaunch& packed, const AttentionShape& shape,
                                    const loom::Tensor& ctx, float* lse, cudaStream_t stream);

/// flash_attention_backward over a packed call: one launch each of δ, dK/dV and dQ.
template <typename S, typename G>
void flash_packed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                     const loom::Tensor& v, const loom::Tensor& ctx, const float* lse,
                                     float* delta, const PackedLaunch& packed, const AttentionShape& shape,
                                     const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                     cudaStream_t stream);

}  // namespace loom_cuda
