// Fused attention backward on CUDA cores (16-bit storage with d = 64 or 128 goes to the
// Tensor-Core kernels, their own delta pass included: flash_attention.hpp): dq, dk, dv from d_ctx, recomputing the
// probabilities from q, k and the forward's lse instead of reading a stored [T, T] matrix. Deterministic: no
// atomics.
//
// With P = softmax(S), P̃ = P ⊙ keep/(1 − p) and ctx = P̃·V:
//   dP̃ = d_ctx·Vᵀ,  dP = dP̃ ⊙ keep/(1 − p),  dS = P ⊙ (dP − δ) with δ_i = Σ_c d_ctx[i,c]·ctx[i,c]
//   (= Σ_j P_ij·dP_ij), dV = P̃ᵀ·d_ctx, dK = scale·dSᵀ·Q, dQ = scale·dS·K.
// Three kernels: delta (one warp per row); dK/dV (a block owns 16 keys and walks every query in
// tiles of 32, lane i scoring query i against the warp's keys); dQ (a block owns 16 queries and
// walks every key in tiles of 32). Each output element is summed by one thread in a fixed order.
//
// Windowed attention (windowed_attention_backward, shape.window ≥ 0): the dK/dV kernel walks the
// query tiles its keys' bands meet and those holding a query row whose band is empty, the dQ
// kernel the key tiles its rows' bands meet, or all of them when one of its rows has an empty band
// (attention_band.cuh); a pair outside the band scores kMaskedKey.
#include <cmath>
#include <type_traits>

#include "attention_band.cuh"
#include "attention_problem.cuh"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "flash_attention.hpp"
#include "float_storage.cuh"
#include "op_preamble.cuh"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kPerWarp = 4;                    // keys (dK/dV) or queries (dQ) per warp
constexpr int kBlockRows = kWarps * kPerWarp;  // 16 owned rows per block
constexpr int kTile = 32;                      // streamed rows per tile, one per lane

template <typename S, typename G>
__global__ void attention_delta_kernel(HeadView<const G> d_ctx, HeadView<const S> ctx, AttentionShape shape,
                                       float* delta) {
  const int64_t rows = shape.batch * shape.heads * shape.seq;
  const int64_t row = blockIdx.x * int64_t{kWarps} + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const int64_t i = row % shape.seq, bh = row / shape.seq, b = bh / shape.heads, h = bh % shape.heads;
  const G* dr = d_ctx.row(b, h, i);
  const S* cr = ctx.row(b, h, i);
  float sum = 0.0f;
  for (int64_t c = lane; c < shape.head_dim; c += 32) sum += load(dr, c) * load(cr, c);
  sum = warp_sum(sum);
  if (lane == 0) delta[row] = sum;
}

/// P_ij from the score and the row's lse (uniform 1/T for rows whose keys are all masked).
__device__ __forceinline__ float recomputed_probability(float s, float lse, float inv_seq) {
  return all_keys_masked(lse) ? inv_seq : expf(s - lse);
}

template <typename S, typename G, int kChunks>
__global__ void __launch_bounds__(kWarps * 32)
    attention_dkdv_kernel(HeadView<const S> q, HeadView<const S> k, HeadView<const S> v,
                          HeadView<const G> d_ctx, const float* mask, const uint8_t* empty_bands,
                          const float* lse, const float* delta, AttentionShape shape, HeadView<float> dk,
                          HeadView<float> dv) {
  extern __shared__ float shared[];
  const int d = static_cast<int>(shape.head_dim);
  const int64_t T = shape.seq;
  float* k_tile = shared;                      // [16][d]  owned keys
  float* v_tile = k_tile + kBlockRows * d;     // [16][d]
  float* q_tile = v_tile + kBlockRows * d;     // [32][d + 1] streamed queries
  float* g_tile = q_tile + kTile * (d + 1);    // [32][d + 1] their d_ctx rows
  float* lse_tile = g_tile + kTile * (d + 1);  // [32]
  float* delta_tile = lse_tile + kTile;        // [32]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t bh = blockIdx.y, b = bh / shape.heads, h = bh % shape.heads;
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kBlockRows;
  const float inv_seq = 1.0f / static_cast<float>(T);

  stage_rows(k_tile, d, k, b, h, j0, kBlockRows, T, d);
  stage_rows(v_tile, d, v, b, h, j0, kBlockRows, T, d);
  float dk_acc[kPerWarp][kChunks], dv_acc[kPerWarp][kChunks];
#pragma unroll
  for (int kk = 0; kk < kPerWarp; ++kk)
#pragma unroll
    for (int t = 0; t < kChunks; ++t) dk_acc[kk][t] = dv_acc[kk][t] = 0.0f;

  const band::TileWalk walk = band::key_block_walk(shape, empty_bands, b, j0, kBlockRows, kTile);
  for (int n = walk.begin(); n < walk.count; n = walk.next(n)) {
    const int64_t i0 = static_cast<int64_t>(n) * kTile;
    __syncthreads();
    stage_rows(q_tile, d + 1, q, b, h, i0, kTile, T, d);
    stage_rows(g_tile, d + 1, d_ctx, b, h, i0, kTile, T, d);
    if (threadIdx.x < kTile) {
      const bool inside = i0 + threadIdx.x < T;
      lse_tile[threadIdx.x] = inside ? lse[bh * T + i0 + threadIdx.x] : 0.0f;
      delta_tile[threadIdx.x] = inside ? delta[bh * T + i0 + threadIdx.x] : 0.0f;
    }
    __syncthreads();
    const int64_t i = i0 + lane;
    const bool valid = i < T;
#pragma unroll
    for (int kk = 0; kk < kPerWarp; ++kk) {
      const int jl = warp * kPerWarp + kk;
      const int64_t j = j0 + jl;
      if (j >= T) continue;  // the same for the whole warp
      float p_dropped = 0.0f, ds = 0.0f;
      if (valid) {
        float dot = 0.0f, dp_dropped = 0.0f;
        for (int c = 0; c < d; ++c) {
          dot += q_tile[lane * (d + 1) + c] * k_tile[jl * d + c];
          dp_dropped += g_tile[lane * (d + 1) + c] * v_tile[jl * d + c];
        }
        const float s = band::in_band(shape.window, i, j)
                            ? shape.scale * dot + (mask != nullptr ? mask[b * T + j] : 0.0f)
                            : loom::kMaskedKey;
        const float prob = recomputed_probability(s, lse_tile[lane], inv_seq);
        const bool keep = !shape.dropout || attention_keeps(shape, bh, i, j);
        p_dropped = keep ? prob * shape.inv_keep : 0.0f;
        const float dp = keep ? dp_dropped * shape.inv_keep : 0.0f;
        ds = prob * (dp - delta_tile[lane]);
      }
      for (int ii = 0; ii < kTile; ++ii) {
        const float pd = __shfl_sync(0xffffffffu, p_dropped, ii);
        const float dsv = __shfl_sync(0xffffffffu, ds, ii);
#pragma unroll
        for (int t = 0; t < kChunks; ++t) {
          const int c = lane + 32 * t;
          if (c < d) {
            dv_acc[kk][t] += pd * g_tile[ii * (d + 1) + c];
            dk_acc[kk][t] += dsv * q_tile[ii * (d + 1) + c];
          }
        }
      }
    }
  }

#pragma unroll
  for (int kk = 0; kk < kPerWarp; ++kk) {
    const int64_t j = j0 + warp * kPerWarp + kk;
    if (j >= T) continue;
    float* dk_row = dk.row(b, h, j);
    float* dv_row = dv.row(b, h, j);
#pragma unroll
    for (int t = 0; t < kChunks; ++t) {
      const int c = lane + 32 * t;
      if (c < d) {
        dk_row[c] = shape.scale * dk_acc[kk][t];
        dv_row[c] = dv_acc[kk][t];
      }
    }
  }
}

template <typename S, typename G, int kChunks>
__global__ void __launch_bounds__(kWarps * 32)
    attention_dq_kernel(HeadView<const S> q, HeadView<const S> k, HeadView<const S> v,
                        HeadView<const G> d_ctx, const float* mask, const uint8_t* empty_bands,
                        const float* lse, const float* delta, AttentionShape shape, HeadView<float> dq) {
  extern __shared__ float shared[];
  const int d = static_cast<int>(shape.head_dim);
  const int64_t T = shape.seq;
  float* q_tile = shared;                    // [16][d]  owned queries
  float* g_tile = q_tile + kBlockRows * d;   // [16][d]  their d_ctx rows
  float* k_tile = g_tile + kBlockRows * d;   // [32][d + 1] streamed keys
  float* v_tile = k_tile + kTile * (d + 1);  // [32][d + 1]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t bh = blockIdx.y, b = bh / shape.heads, h = bh % shape.heads;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kBlockRows;
  const float inv_seq = 1.0f / static_cast<float>(T);

  stage_rows(q_tile, d, q, b, h, q0, kBlockRows, T, d);
  stage_rows(g_tile, d, d_ctx, b, h, q0, kBlockRows, T, d);
  float row_lse[kPerWarp], row_delta[kPerWarp], dq_acc[kPerWarp][kChunks];
#pragma unroll
  for (int rr = 0; rr < kPerWarp; ++rr) {
    const int64_t i = q0 + warp * kPerWarp + rr;
    row_lse[rr] = i < T ? lse[bh * T + i] : 0.0f;
    row_delta[rr] = i < T ? delta[bh * T + i] : 0.0f;
#pragma unroll
    for (int t = 0; t < kChunks; ++t) dq_acc[rr][t] = 0.0f;
  }

  const band::TileWalk walk = band::query_block_walk(shape, empty_bands, b, q0, kBlockRows, kTile);
  for (int n = walk.begin(); n < walk.count; n = walk.next(n)) {
    const int64_t j0 = static_cast<int64_t>(n) * kTile;
    __syncthreads();
    stage_rows(k_tile, d + 1, k, b, h, j0, kTile, T, d);
    stage_rows(v_tile, d + 1, v, b, h, j0, kTile, T, d);
    __syncthreads();
    const int64_t j = j0 + lane;
    const bool valid = j < T;
    const float key_bias = valid && mask != nullptr ? mask[b * T + j] : 0.0f;
#pragma unroll
    for (int rr = 0; rr < kPerWarp; ++rr) {
      const int r = warp * kPerWarp + rr;
      const int64_t i = q0 + r;
      if (i >= T) continue;  // the same for the whole warp
      float ds = 0.0f;
      if (valid) {
        float dot = 0.0f, dp_dropped = 0.0f;
        for (int c = 0; c < d; ++c) {
          dot += q_tile[r * d + c] * k_tile[lane * (d + 1) + c];
          dp_dropped += g_tile[r * d + c] * v_tile[lane * (d + 1) + c];
        }
        const float s = band::in_band(shape.window, i, j) ? shape.scale * dot + key_bias : loom::kMaskedKey;
        const float prob = recomputed_probability(s, row_lse[rr], inv_seq);
        const bool keep = !shape.dropout || attention_keeps(shape, bh, i, j);
        const float dp = keep ? dp_dropped * shape.inv_keep : 0.0f;
        ds = prob * (dp - row_delta[rr]);
      }
      for (int jj = 0; jj < kTile; ++jj) {
        const float dsv = __shfl_sync(0xffffffffu, ds, jj);
#pragma unroll
        for (int t = 0; t < kChunks; ++t) {
          const int c = lane + 32 * t;
          if (c < d) dq_acc[rr][t] += dsv * k_tile[jj * (d + 1) + c];
        }
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < kPerWarp; ++rr) {
    const int64_t i = q0 + warp * kPerWarp + rr;
    if (i >= T) continue;
    float* dq_row = dq.row(b, h, i);
#pragma unroll
    for (int t = 0; t < kChunks; ++t) {
      const int c = lane + 32 * t;
      if (c < d) dq_row[c] = shape.scale * dq_acc[rr][t];
    }
  }
}

/// Raises the kernel's dynamic shared memory limit when it needs more than the default 48 KiB.
template <typename Kernel>
void allow_shared(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    cuda_check(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        "attention_backward: cudaFuncSetAttribute");
}

template <typename S, typename G, int kChunks>
void launch_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                     const loom::Tensor& v, const loom::Tensor& ctx, const float* lse, const float* mask,
                     const uint8_t* empty_bands, const AttentionShape& shape, const loom::Tensor& dq,
                     const loom::Tensor& dk, const loom::Tensor& dv, float* delta, bool tensor_cores,
                     cudaStream_t stream) {
  const int d = static_cast<int>(shape.head_dim);
  if constexpr (!std::is_same_v<S, float>) {  // the Tensor-Core kernels take 16-bit views only
    if (tensor_cores && flash_attention_serves(shape, q, k, v, ctx, d_ctx)) {  // δ included
      flash_attention_backward<S, G>(d_ctx, q, k, v, ctx, lse, delta, mask, empty_bands, shape, dq, dk, dv,
                                     stream);
      return;
    }
  }
  const int64_t rows = shape.batch * shape.heads * shape.seq;
  attention_delta_kernel<S, G>
      <<<static_cast<unsigned>((rows + kWarps - 1) / kWarps), kWarps * 32, 0, stream>>>(
          head_view<const G>(d_ctx), head_view<const S>(ctx), shape, delta);

  const dim3 grid(static_cast<unsigned>((shape.seq + kBlockRows - 1) / kBlockRows),
                  static_cast<unsigned>(shape.batch * shape.heads));
  const size_t dkdv_bytes =
      sizeof(float) * static_cast<size_t>(2 * kBlockRows * d + 2 * kTile * (d + 1) + 2 * kTile);
  allow_shared(attention_dkdv_kernel<S, G, kChunks>, dkdv_bytes);
  attention_dkdv_kernel<S, G, kChunks><<<grid, kWarps * 32, dkdv_bytes, stream>>>(
      head_view<const S>(q), head_view<const S>(k), head_view<const S>(v), head_view<const G>(d_ctx), mask,
      empty_bands, lse, delta, shape, head_view<float>(dk), head_view<float>(dv));

  const size_t dq_bytes = sizeof(float) * static_cast<size_t>(2 * kBlockRows * d + 2 * kTile * (d + 1));
  allow_shared(attention_dq_kernel<S, G, kChunks>, dq_bytes);
  attention_dq_kernel<S, G, kChunks><<<grid, kWarps * 32, dq_bytes, stream>>>(
      head_view<const S>(q), head_view<const S>(k), head_view<const S>(v), head_view<const G>(d_ctx), mask,
      empty_bands, lse, delta, shape, head_view<float>(dq));
}

}  // namespace

void CudaBackend::attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                     const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                                     const loom::Tensor& key_mask, float scale, float p, uint64_t seed,
                                     uint64_t offset, const loom::Tensor& dq, const loom::Tensor& dk,
                                     const loom::Tensor& dv, const loom::Tensor& delta) {
  enqueue_attention_backward("attention_backward", d_ctx, q, k, v, ctx, lse, key_mask, scale, false, -1, p,
                             seed, offset, dq, dk, dv, delta);
}

void CudaBackend::windowed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q,
                                              const loom::Tensor& k, const loom::Tensor& v,
                                              const loom::Tensor& ctx, const loom::Tensor& lse,
                                              const loom::Tensor& key_mask, float scale, int64_t window,
                                              float p, uint64_t seed, uint64_t offset, const loom::Tensor& dq,
                                              const loom::Tensor& dk, const loom::Tensor& dv,
                                              const loom::Tensor& delta) {
  enqueue_attention_backward("windowed_attention_backward", d_ctx, q, k, v, ctx, lse, key_mask, scale, true,
                             window, p, seed, offset, dq, dk, dv, delta);
}

void CudaBackend::enqueue_attention_backward(const char* op, const loom::Tensor& d_ctx, const loom::Tensor& q,
                                             const loom::Tensor& k, const loom::Tensor& v,
                                             const loom::Tensor& ctx, const loom::Tensor& lse,
                                             const loom::Tensor& key_mask, float scale, bool windowed,
                                             int64_t window, float p, uint64_t seed, uint64_t offset,
                                             const loom::Tensor& dq, const loom::Tensor& dk,
                                             const loom::Tensor& dv, const loom::Tensor& delta) {
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        const loom_backend::AttentionDims n =
            windowed ? loom_backend::check_windowed_attention_backward(check, d_ctx, q, k, v, ctx, lse,
                                                                       key_mask, window, p, dq, dk, dv, delta)
                     : loom_backend::check_attention_backward(check, d_ctx, q, k, v, ctx, lse, key_mask, p,
                                                              dq, dk, dv, delta);
        return attention_shape(check, n, scale, windowed ? window : -1, p, seed, offset);
      },
      {q.dtype},
      [&](const AttentionShape& shape, auto tag) {
        using S = decltype(tag);
        const float* mask = key_mask.defined() ? static_cast<const float*>(key_mask.data) : nullptr;
        const uint8_t* empty_bands = empty_band_flags(mask, shape);
        const auto* lse_data = static_cast<const float*>(lse.data);
        auto* delta_data = static_cast<float*>(delta.data);
        const auto run = [&](auto g_tag) {
          using G = decltype(g_tag);
          if (shape.head_dim <= 64)
            launch_backward<S, G, 2>(d_ctx, q, k, v, ctx, lse_data, mask, empty_bands, shape, dq, dk, dv,
                                     delta_data, tensor_core_attention_, stream_);
          else
            launch_backward<S, G, 4>(d_ctx, q, k, v, ctx, lse_data, mask, empty_bands, shape, dq, dk, dv,
                                     delta_data, tensor_core_attention_, stream_);
        };
        // d_ctx is f32 or q's dtype (the contract): a choice of two, not a dispatch over the three
        // storage types, so no kernel is compiled for a pairing that cannot occur.
        if (d_ctx.dtype == DType::f32)
          run(float{});
        else
          run(S{});
      });
}

}  // namespace loom_cuda
