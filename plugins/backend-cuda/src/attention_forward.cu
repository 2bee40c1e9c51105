// Fused attention forward on CUDA cores, flash-attention style (16-bit storage with d = 64 or 128
// goes to the Tensor-Core kernels instead: flash_attention.hpp): ctx = dropout(softmax(scale·q·kᵀ + mask))·v
// and the row log-sum-exp, without ever storing the [T, T] scores.
//
// Block = 4 warps = 16 query rows (4 per warp) of one (batch, head); the keys are walked in tiles
// of 32 staged in shared memory (K padded to d + 1 floats per row so lane j reading key j's
// column c hits distinct banks). Per tile, lane j scores key j for each of its warp's rows, the
// warp updates the running max m, the running Σexp l and rescales its accumulator (online
// softmax), then adds the tile's dropped-out probabilities times V, lane c owning output columns
// c, c + 32, ... All math is f32 whatever the storage; ctx is rounded once.
//
// Windowed attention (windowed_attention_forward, shape.window ≥ 0): a block walks only the key
// tiles its rows' bands meet, or all of them when one of its rows has an empty band
// (attention_band.cuh); a key outside a row's band scores kMaskedKey.
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
constexpr int kRowsPerWarp = 4;
constexpr int kBlockRows = kWarps * kRowsPerWarp;  // 16 query rows per block
constexpr int kKeyTile = 32;                       // one key per lane

template <typename S, int kChunks>
__global__ void __launch_bounds__(kWarps * 32)
    attention_forward_kernel(HeadView<const S> q, HeadView<const S> k, HeadView<const S> v, const float* mask,
                             const uint8_t* empty_bands, AttentionShape shape, HeadView<S> ctx, float* lse) {
  extern __shared__ float shared[];
  const int d = static_cast<int>(shape.head_dim);
  const int64_t T = shape.seq;
  float* q_tile = shared;                       // [16][d]
  float* k_tile = q_tile + kBlockRows * d;      // [32][d + 1]
  float* v_tile = k_tile + kKeyTile * (d + 1);  // [32][d]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t bh = blockIdx.y, b = bh / shape.heads, h = bh % shape.heads;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kBlockRows;

  stage_rows(q_tile, d, q, b, h, q0, kBlockRows, T, d);
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kChunks];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int t = 0; t < kChunks; ++t) o[rr][t] = 0.0f;
  }

  const band::TileWalk walk = band::query_block_walk(shape, empty_bands, b, q0, kBlockRows, kKeyTile);
  for (int n = walk.begin(); n < walk.count; n = walk.next(n)) {
    const int64_t j0 = static_cast<int64_t>(n) * kKeyTile;
    __syncthreads();  // the previous tile is no longer read (and q_tile is complete)
    stage_rows(k_tile, d + 1, k, b, h, j0, kKeyTile, T, d);
    stage_rows(v_tile, d, v, b, h, j0, kKeyTile, T, d);
    __syncthreads();
    const int64_t j = j0 + lane;
    const bool valid = j < T;
    const float key_bias = valid && mask != nullptr ? mask[b * T + j] : 0.0f;
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t i = q0 + r;
      if (i >= T) continue;  // the same for the whole warp
      float s = -INFINITY;
      if (valid && !band::in_band(shape.window, i, j)) {
        s = loom::kMaskedKey;
      } else if (valid) {
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += q_tile[r * d + c] * k_tile[lane * (d + 1) + c];
        s = shape.scale * dot + key_bias;
      }
      // Key j0 is always valid (scored, or kMaskedKey outside the band), so the tile maximum and
      // m_new are finite.
      const float m_new = fmaxf(m[rr], warp_max(s));
      const float p = valid ? expf(s - m_new) : 0.0f;
      const float correction = expf(m[rr] - m_new);  // 0 on the first tile (m = −∞)
      l[rr] = l[rr] * correction + warp_sum(p);
      m[rr] = m_new;
      float weight = p;
      if (shape.dropout && valid) weight = attention_keeps(shape, bh, i, j) ? p * shape.inv_keep : 0.0f;
#pragma unroll
      for (int t = 0; t < kChunks; ++t) o[rr][t] *= correction;
      for (int jj = 0; jj < kKeyTile; ++jj) {
        const float w = __shfl_sync(0xffffffffu, weight, jj);
#pragma unroll
        for (int t = 0; t < kChunks; ++t) {
          const int c = lane + 32 * t;
          if (c < d) o[rr][t] += w * v_tile[jj * d + c];
        }
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kRowsPerWarp + rr;
    if (i >= T) continue;
    const float inv_l = 1.0f / l[rr];
    S* out = ctx.row(b, h, i);
#pragma unroll
    for (int t = 0; t < kChunks; ++t) {
      const int c = lane + 32 * t;
      if (c < d) store(out, c, o[rr][t] * inv_l);
    }
    if (lane == 0) lse[bh * T + i] = m[rr] + logf(l[rr]);
  }
}

template <typename S, int kChunks>
void launch_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v, const float* mask,
                    const uint8_t* empty_bands, const AttentionShape& shape, const loom::Tensor& ctx,
                    float* lse, cudaStream_t stream) {
  const int d = static_cast<int>(shape.head_dim);
  const size_t shared_bytes =
      sizeof(float) * static_cast<size_t>(kBlockRows * d + kKeyTile * (d + 1) + kKeyTile * d);
  const dim3 grid(static_cast<unsigned>((shape.seq + kBlockRows - 1) / kBlockRows),
                  static_cast<unsigned>(shape.batch * shape.heads));
  attention_forward_kernel<S, kChunks><<<grid, kWarps * 32, shared_bytes, stream>>>(
      head_view<const S>(q), head_view<const S>(k), head_view<const S>(v), mask, empty_bands, shape,
      head_view<S>(ctx), lse);
}

}  // namespace

void CudaBackend::attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                    const loom::Tensor& key_mask, float scale, float p, uint64_t seed,
                                    uint64_t offset, const loom::Tensor& ctx, const loom::Tensor& lse) {
  enqueue_attention_forward("attention_forward", q, k, v, key_mask, scale, false, -1, p, seed, offset, ctx,
                            lse);
}

void CudaBackend::windowed_attention_forward(const loom::Tensor& q, const loom::Tensor& k,
                                             const loom::Tensor& v, const loom::Tensor& key_mask, float scale,
                                             int64_t window, float p, uint64_t seed, uint64_t offset,
                                             const loom::Tensor& ctx, const loom::Tensor& lse) {
  enqueue_attention_forward("windowed_attention_forward", q, k, v, key_mask, scale, true, window, p, seed,
                            offset, ctx, lse);
}

void CudaBackend::enqueue_attention_forward(const char* op, const loom::Tensor& q, const loom::Tensor& k,
                                            const loom::Tensor& v, const loom::Tensor& key_mask, float scale,
                                            bool windowed, int64_t window, float p, uint64_t seed,
                                            uint64_t offset, const loom::Tensor& ctx,
                                            const loom::Tensor& lse) {
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        const loom_backend::AttentionDims n =
            windowed ? loom_backend::check_windowed_attention_forward(check, q, k, v, key_mask, window, p,
                                                                      ctx, lse)
                     : loom_backend::check_attention_forward(check, q, k, v, key_mask, p, ctx, lse);
        return attention_shape(check, n, scale, windowed ? window : -1, p, seed, offset);
      },
      {q.dtype},
      [&](const AttentionShape& shape, auto tag) {
        using S = decltype(tag);
        const float* mask = key_mask.defined() ? static_cast<const float*>(key_mask.data) : nullptr;
        const uint8_t* empty_bands = empty_band_flags(mask, shape);
        if constexpr (!std::is_same_v<S, float>) {  // the Tensor-Core kernels take 16-bit views only
          if (tensor_core_attention_ && flash_attention_serves(shape, q, k, v, ctx)) {
            flash_attention_forward<S>(q, k, v, mask, empty_bands, shape, ctx, static_cast<float*>(lse.data),
                                       stream_);
            return;
          }
        }
        auto* lse_data = static_cast<float*>(lse.data);
        if (shape.head_dim <= 64)
          launch_forward<S, 2>(q, k, v, mask, empty_bands, shape, ctx, lse_data, stream_);
        else
          launch_forward<S, 4>(q, k, v, mask, empty_bands, shape, ctx, lse_data, stream_);
      });
}

}  // namespace loom_cuda
