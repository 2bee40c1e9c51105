// δ_i = Σ_c d_ctx[i, c]·ctx[i, c] for the Tensor-Core attention backward (its rows are 16-byte
// aligned, d = 64 or 128): the per-row term of dS = P ⊙ (dP − δ).
//
// The CUDA-core δ pass (attention_backward.cu) gives each row a warp whose lanes read one element
// at a time, two reads per lane at d = 64, each waiting for the last: the H200 ran it at 1.45 TB/s
// (35 µs per bert-large layer at batch 64). Here a row has d / 4 lanes, each reading a quad of
// d_ctx (16 bytes in f32) and of ctx (8 bytes), and a thread takes all its rows' quads of the
// block's 64 rows before it sums any: 8 (d = 64) or 16 (d = 128) rows, up to 384 bytes in flight.
// The order is fixed whatever the grid: a lane's four products in column order, then the row's
// lanes by an xor tree (offsets d/8, …, 2, 1).
#pragma once

#include "flash_tiles.cuh"

namespace loom_cuda::flash {

/// G: d_ctx's storage (f32 or S); S: ctx's.
template <typename S, typename G>
struct DeltaArgs {
  HeadRows<const G> d_ctx;
  HeadRows<const S> ctx;
  float* delta;  // [B, H, T]
  AttentionShape shape;
};

/// Four consecutive values of a row as f32: columns 4q .. 4q + 3 (16-byte aligned for f32, 8-byte
/// for 16-bit storage).
template <typename T>
LOOM_LANE_FN void load_quad_of_row(const T* row, int q, float (&out)[4]) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__CUDA_ARCH__)
    const float4 v = reinterpret_cast<const float4*>(row)[q];
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
#else
    std::memcpy(out, row + 4 * q, sizeof out);
#endif
  } else {
    uint32_t words[2];
#if defined(__CUDA_ARCH__)
    const uint2 v = reinterpret_cast<const uint2*>(row)[q];
    words[0] = v.x, words[1] = v.y;
#else
    std::memcpy(words, row + 4 * q, sizeof words);
#endif
    LOOM_UNROLL
    for (int j = 0; j < 4; ++j)  // little-endian: column 4q in the low half of the first word
      out[j] = lane::widen<T>(static_cast<uint16_t>(words[j / 2] >> (16 * (j % 2))));
  }
}

template <typename S, typename G, int kD>
struct RowDeltas {
  static_assert(kD == 64 || kD == 128, "head dimension 64 or 128");
  static constexpr int kThreads = 128, kSharedBytes = 0;
  static constexpr int kLanesPerRow = kD / 4;                  // a quad of columns each
  static constexpr int kRowsAtOnce = kThreads / kLanesPerRow;  // 8 or 4
  static constexpr int kPasses = 64 / kRowsAtOnce;             // the block's 64 rows

  /// One thread of block (block_x, bh): rows [64·block_x, 64·block_x + 64) of head bh.
  LOOM_LANE_FN static void run(const DeltaArgs<S, G>& a, unsigned char*, int block_x, int64_t bh, int thread) {
    const int64_t T = a.shape.seq, b = bh / a.shape.heads, h = bh % a.shape.heads;
    const int quad = thread % kLanesPerRow, slot = thread / kLanesPerRow;
    const int64_t first = static_cast<int64_t>(block_x) * 64 + slot;
    float g[kPasses][4], c[kPasses][4];
    LOOM_UNROLL
    for (int p = 0; p < kPasses; ++p) {  // every load first
      const int64_t i = first + p * kRowsAtOnce;
      if (i < T) {
        load_quad_of_row(a.d_ctx.row(b, h, i), quad, g[p]);
        load_quad_of_row(a.ctx.row(b, h, i), quad, c[p]);
      } else {
        LOOM_UNROLL
        for (int j = 0; j < 4; ++j) g[p][j] = c[p][j] = 0.0f;
      }
    }
    LOOM_UNROLL
    for (int p = 0; p < kPasses; ++p) {
      float sum = g[p][0] * c[p][0];
      LOOM_UNROLL
      for (int j = 1; j < 4; ++j) sum += g[p][j] * c[p][j];
      LOOM_UNROLL
      for (int offset = kLanesPerRow / 2; offset >= 1; offset /= 2) sum += lane::shfl_xor(sum, offset);
      const int64_t i = first + p * kRowsAtOnce;
      if (quad == 0 && i < T) a.delta[bh * T + i] = sum;
    }
  }
};

}  // namespace loom_cuda::flash
