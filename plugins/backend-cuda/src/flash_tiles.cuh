// Tiles and fragments of the Tensor-Core attention kernels (flash_attention_forward.cuh,
// flash_attention_backward.cuh): where a row of a head lives in global memory, how a [rows, D]
// 16-bit tile is laid out in shared memory, which lane's ldmatrix address feeds which operand
// fragment, and the element bookkeeping (mask, dropout bits) of an f32 accumulator fragment.
//
// Shared-memory tiles are row-major [rows][D] 16-bit values with D = 64 or 128, stored in 16-byte
// chunks of 8 values; chunk c of row r sits at chunk position c XOR (r mod 8) of that row. The 8
// row addresses one ldmatrix matrix reads (8 consecutive rows, one logical chunk) then fall on 8
// different 16-byte bank groups: no bank conflicts for either the plain or the transposed load.
//
// Fragment naming follows the PTX ISA for mma.m16n8k16: for lane l, g = l / 4 and t = l % 4; an
// f32 accumulator fragment c[4] of a 16×8 tile holds rows g (c[0], c[1]) and g + 8 (c[2], c[3]),
// columns 2t and 2t + 1.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attention_shape.hpp"
#include "lane_primitives.cuh"
#include "loom/sdk/philox.hpp"

#if defined(__CUDACC__)
#include "philox_device.cuh"
#endif

namespace loom_cuda::flash {

using lane::LaneOps;

/// Rows of one (batch, head) of a [B, H, T, d] view whose last dimension is contiguous.
template <typename T>
struct HeadRows {
  T* data;
  int64_t batch_stride, head_stride, row_stride;
  LOOM_LANE_FN T* row(int64_t b, int64_t h, int64_t i) const {
    return data + b * batch_stride + h * head_stride + i * row_stride;
  }
};

/// Element offset of (row, 16-byte chunk) in a swizzled [rows][kD] tile of 16-bit values.
template <int kD>
LOOM_LANE_FN int tile_offset(int row, int chunk) {
  return row * kD + ((chunk ^ (row & 7)) << 3);
}

/// 16 bytes (four words) to a 16-byte-aligned shared-memory address.
LOOM_LANE_FN void store_16_bytes(void* destination, const uint32_t words[4]) {
#if defined(__CUDA_ARCH__)
  *static_cast<uint4*>(destination) = make_uint4(words[0], words[1], words[2], words[3]);
#else
  std::memcpy(destination, words, 16);
#endif
}

/// Copies rows [first, first + kRows) of head (b, h) into a swizzled tile with cp.async, every
/// thread of the block taking 16-byte chunks in turn; rows at or past `seq` become zeros (plain
/// stores: nothing to copy). Call cp_async_commit() and wait before reading.
template <typename S, int kD, int kRows, int kThreads>
LOOM_LANE_FN void stage_tile(S* tile, HeadRows<const S> source, int64_t b, int64_t h, int64_t first,
                             int64_t seq, int thread) {
  constexpr int kChunks = kD / 8;
  for (int index = thread; index < kRows * kChunks; index += kThreads) {
    const int r = index / kChunks, chunk = index % kChunks;
    S* destination = tile + tile_offset<kD>(r, chunk);
    if (first + r < seq) {
      lane::cp_async_16(destination, source.row(b, h, first + r) + chunk * 8);
    } else {
      const uint32_t zeros[4] = {0u, 0u, 0u, 0u};
      store_16_bytes(destination, zeros);
    }
  }
}

/// stage_tile for f32 rows (the incoming gradient of an f32 backward pass): each chunk is 8 f32
/// read and rounded to S on the way (plain loads and stores, no cp.async).
template <typename S, int kD, int kRows, int kThreads>
LOOM_LANE_FN void stage_tile(S* tile, HeadRows<const float> source, int64_t b, int64_t h, int64_t first,
                             int64_t seq, int thread) {
  constexpr int kChunks = kD / 8;
  for (int index = thread; index < kRows * kChunks; index += kThreads) {
    const int r = index / kChunks, chunk = index % kChunks;
    uint32_t packed[4] = {0u, 0u, 0u, 0u};
    if (first + r < seq) {
      const float* values = source.row(b, h, first + r) + chunk * 8;
      float f[8];
#if defined(__CUDA_ARCH__)
      const float4 low = reinterpret_cast<const float4*>(values)[0],
                   high = reinterpret_cast<const float4*>(values)[1];
      f[0] = low.x, f[1] = low.y, f[2] = low.z, f[3] = low.w, f[4] = high.x, f[5] = high.y, f[6] = high.z,
      f[7] = high.w;
#else
      std::memcpy(f, values, sizeof f);
#endif
      LOOM_UNROLL
      for (int p = 0; p < 4; ++p) packed[p] = lane::pack_pair<S>(f[2 * p], f[2 * p + 1]);
    }
    store_16_bytes(tile + tile_offset<kD>(r, chunk), packed);
  }
}

/// The A fragment (row-major 16×16) of rows [row0, row0 + 16), columns [16·ks, 16·ks + 16) of a
/// swizzled tile: matrices 0..3 are (rows 0–7, cols 0–7), (rows 8–15, cols 0–7), (rows 0–7,
/// cols 8–15), (rows 8–15, cols 8–15), which is a[0..3]'s order in the mma layout.
template <typename S, int kD>
LOOM_LANE_FN void load_a(uint32_t a[4], const S* tile, int row0, int ks, int lane_index) {
  const int matrix = lane_index >> 3, r = lane_index & 7;
  const int row = row0 + (matrix & 1) * 8 + r, chunk = 2 * ks + (matrix >> 1);
  lane::ldmatrix_x4<false>(a, tile + tile_offset<kD>(row, chunk));
}

/// B fragments (16×8, k × n) of two n-tiles where B[k][n] = tile[n0 + n][16·ks + k] — the tile
/// holds the operand transposed, as K does in Q·Kᵀ: n-tile 0 is rows n0..n0+7, n-tile 1 rows
/// n0+8..n0+15; b[x][0] covers k 0–7, b[x][1] k 8–15.
template <typename S, int kD>
LOOM_LANE_FN void load_b_pair_rows_n(uint32_t b[2][2], const S* tile, int n0, int ks, int lane_index) {
  const int matrix = lane_index >> 3, r = lane_index & 7;
  const int row = n0 + (matrix >> 1) * 8 + r, chunk = 2 * ks + (matrix & 1);
  uint32_t regs[4];
  lane::ldmatrix_x4<false>(regs, tile + tile_offset<kD>(row, chunk));
  b[0][0] = regs[0], b[0][1] = regs[1], b[1][0] = regs[2], b[1][1] = regs[3];
}

/// B fragments of two n-tiles where B[k][n] = tile[k0 + k][8·nc + n] — the tile holds the operand
/// as is, as V does in P·V (a transposed ldmatrix): n-tile 0 is columns chunk nc, n-tile 1 chunk
/// nc + 1; b[x][0] covers rows k0..k0+7, b[x][1] rows k0+8..k0+15.
template <typename S, int kD>
LOOM_LANE_FN void load_b_pair_rows_k(uint32_t b[2][2], const S* tile, int k0, int nc, int lane_index) {
  const int matrix = lane_index >> 3, r = lane_index & 7;
  const int row = k0 + (matrix & 1) * 8 + r, chunk = nc + (matrix >> 1);
  uint32_t regs[4];
  lane::ldmatrix_x4<true>(regs, tile + tile_offset<kD>(row, chunk));
  b[0][0] = regs[0], b[0][1] = regs[1], b[1][0] = regs[2], b[1][1] = regs[3];
}

/// The A fragment (16 × 16) made of two adjacent f32 accumulator fragments (columns 0–7 and
/// 8–15), rounded to S: how probabilities computed by one mma feed the next without shared memory.
template <typename S>
LOOM_LANE_FN void accumulators_to_a(uint32_t a[4], const float left[4], const float right[4]) {
  a[0] = lane::pack_pair<S>(left[0], left[1]);
  a[1] = lane::pack_pair<S>(left[2], left[3]);
  a[2] = lane::pack_pair<S>(right[0], right[1]);
  a[3] = lane::pack_pair<S>(right[2], right[3]);
}

/// acc[n] += A·B over a row of 16×8 tiles: one mma per tile.
template <typename S>
LOOM_LANE_FN void mma(float acc[4], const uint32_t a[4], const uint32_t b[2]) {
  lane::mma_16816<S>(acc, a, b, acc);
}

/// acc (16 × kN) += rows [row0, row0 + 16) of a_tile · (rows [0, kN) of b_tile)ᵀ over all kD
/// columns: S = Q·Kᵀ and its kin, with both operands in shared memory.
template <typename S, int kD, int kN>
LOOM_LANE_FN void add_product_transposed(float acc[kN / 8][4], const S* a_tile, int row0, const S* b_tile,
                                         int lane_index) {
  LOOM_UNROLL
  for (int ks = 0; ks < kD / 16; ++ks) {
    uint32_t a[4];
    load_a<S, kD>(a, a_tile, row0, ks, lane_index);
    LOOM_UNROLL
    for (int np = 0; np < kN / 16; ++np) {
      uint32_t b[2][2];
      load_b_pair_rows_n<S, kD>(b, b_tile, 16 * np, ks, lane_index);
      lane::mma_16816<S>(acc[2 * np], a, b[0], acc[2 * np]);
      lane::mma_16816<S>(acc[2 * np + 1], a, b[1], acc[2 * np + 1]);
    }
  }
}

/// acc (16 × kD) += P · rows [0, kK) of tile, where P (16 × kK) is this warp's f32 accumulator
/// fragments, rounded to S for the mma: P̃·V and its kin.
template <typename S, int kD, int kK>
LOOM_LANE_FN void add_product(float acc[kD / 8][4], const float p[kK / 8][4], const S* tile, int lane_index) {
  LOOM_UNROLL
  for (int kk = 0; kk < kK / 16; ++kk) {
    uint32_t a[4];
    accumulators_to_a<S>(a, p[2 * kk], p[2 * kk + 1]);
    LOOM_UNROLL
    for (int dp = 0; dp < kD / 16; ++dp) {
      uint32_t b[2][2];
      load_b_pair_rows_k<S, kD>(b, tile, 16 * kk, 2 * dp, lane_index);
      lane::mma_16816<S>(acc[2 * dp], a, b[0], acc[2 * dp]);
      lane::mma_16816<S>(acc[2 * dp + 1], a, b[1], acc[2 * dp + 1]);
    }
  }
}

/// One step of a double-buffered tile loop, called by every thread at the top of each step: when
/// the walk has a next tile (`has_next`), stages it into the other buffer (`stage_next`, which
/// issues cp.async copies; after a barrier, since that buffer was read at the previous step), and
/// waits until this step's tile has arrived and is visible to the whole block.
template <typename StageNext>
LOOM_LANE_FN void next_tile(bool has_next, StageNext&& stage_next) {
  if (has_next) {
    lane::block_sync();
    stage_next();
    lane::cp_async_commit();
    lane::cp_async_wait<1>();  // tile n arrived; tile n + 1 may still be in flight
  } else {
    lane::cp_async_wait<0>();
  }
  lane::block_sync();
}

/// Row (within the 16-row tile) and column (within the 8-column tile) of accumulator element r.
LOOM_LANE_FN int fragment_row(int lane_index, int r) {
  return (lane_index >> 2) + 8 * (r >> 1);
}
LOOM_LANE_FN int fragment_col(int lane_index, int r) {
  return 2 * (lane_index & 3) + (r & 1);
}

/// The keep bits of Philox block `block`: bit k set when word k is at least the threshold (an
/// element is dropped when its word is below it, loom/sdk/philox.hpp).
LOOM_LANE_FN uint32_t keep_bits(const AttentionShape& shape, uint64_t block) {
  uint32_t w[4];
#if defined(__CUDA_ARCH__)
  const uint4 words = philox_block(shape.seed, block);
  w[0] = words.x, w[1] = words.y, w[2] = words.z, w[3] = words.w;
#else
  const loom::Philox4x32 words = loom::philox4x32_10(
      loom::Philox4x32{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}},
      shape.seed);
  for (int k = 0; k < 4; ++k) w[k] = words.word[k];
#endif
  uint32_t bits = 0;
  LOOM_UNROLL
  for (int k = 0; k < 4; ++k) bits |= (w[k] >= shape.threshold ? 1u : 0u) << k;
  return bits;
}

/// Whether dropout keeps probabilities (bh, i, j8 + 2t) and (bh, i, j8 + 2t + 1) — the pair lane
/// 4g + t holds in row g (or g + 8) of a query × key accumulator tile whose 8 columns start at j8:
/// elements ((b·H + h)·T + i)·T + j of a contiguous [B, H, T, T] tensor, as
/// loom/sdk/ops/fused_attention.hpp prescribes. The quad's 8 words span 2 or 3 Philox blocks: lane
/// t draws block t of them (t < 3) and each lane fetches its bits with shuffles. Every lane of the
/// warp calls it (it shuffles).
struct KeepPair {
  bool first, second;
};
LOOM_LANE_FN KeepPair keeps_of_key_pair(const AttentionShape& shape, int64_t bh, int64_t i, int64_t j8,
                                        int lane_index) {
  const uint64_t base = shape.offset + static_cast<uint64_t>((bh * shape.seq + i) * shape.seq + j8);
  const int g = lane_index >> 2, t = lane_index & 3;
  const uint32_t bits = t < 3 ? keep_bits(shape, (base >> 2) + static_cast<uint64_t>(t)) : 0u;
  const int first = static_cast<int>(base & 3u) + 2 * t, second = first + 1;  // word positions from block 0
  const uint32_t first_bits = lane::shfl_index(bits, 4 * g + (first >> 2));
  const uint32_t second_bits = lane::shfl_index(bits, 4 * g + (second >> 2));
  return KeepPair{((first_bits >> (first & 3)) & 1u) != 0, ((second_bits >> (second & 3)) & 1u) != 0};
}

/// Whether dropout keeps probabilities (bh, i, jw + g) and (bh, i, jw + g + 8) — the two keys this
/// lane holds in a 16-key × query accumulator tile (rows g, g + 8; lanes 4g + t, g = 0..7, share
/// query i). Their 16 words span 4 or 5 Philox blocks: lane 4g + t draws block g of them (g < 5)
/// and turns it into 4 keep bits, and each lane fetches its two bits with shuffles — one block per
/// lane instead of one per element. Every lane of the warp calls it (it shuffles).
LOOM_LANE_FN KeepPair keeps_of_key_rows(const AttentionShape& shape, int64_t bh, int64_t i, int64_t jw,
                                        int lane_index) {
  const uint64_t base = shape.offset + static_cast<uint64_t>((bh * shape.seq + i) * shape.seq + jw);
  const int g = lane_index >> 2, t = lane_index & 3;
  const uint32_t bits = g < 5 ? keep_bits(shape, (base >> 2) + static_cast<uint64_t>(g)) : 0u;
  const int first = static_cast<int>(base & 3u) + g, second = first + 8;  // word positions from block 0
  const uint32_t first_bits = lane::shfl_index(bits, 4 * (first >> 2) + t);
  const uint32_t second_bits = lane::shfl_index(bits, 4 * (second >> 2) + t);
  return KeepPair{((first_bits >> (first & 3)) & 1u) != 0, ((second_bits >> (second & 3)) & 1u) != 0};
}

/// Rows whose keys are all masked have lse ≈ kMaskedKey (every score rounds to it): their
/// probabilities are uniform, 1/T, which exp(s − lse) cannot recover in f32.
LOOM_LANE_FN bool all_keys_masked(float lse) {
  return lse < -1.0e37f;
}

/// Two adjacent 16-bit values (an even column pair) stored as one 32-bit word.
template <typename S>
LOOM_LANE_FN void store_pair(S* destination, float low, float high) {
  const uint32_t word = lane::pack_pair<S>(low, high);
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint32_t*>(destination) = word;
#else
  std::memcpy(static_cast<void*>(destination), &word, sizeof word);
#endif
}

}  // namespace loom_cuda::flash
