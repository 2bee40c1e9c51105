// Fused attention forward on Tensor Cores (FlashAttention-2's work split), for 16-bit storage and
// head dimension 64 or 128: ctx = dropout(softmax(scale·q·kᵀ + mask))·v and the row log-sum-exp.
//
// A block of 4 warps owns 64 query rows of one (batch, head), 16 per warp, and walks the keys in
// tiles of 64 that cp.async stages into shared memory one tile ahead (double buffering). Per tile
// each warp computes its 16×64 scores with mma.sync (Q fragments stay in registers), applies the
// scale, the key mask and the tail (keys ≥ T score −∞), updates the running row maximum m and sum
// l (online softmax; a row's 4 lanes agree through two xor shuffles) and rescales its output
// accumulator, then turns the dropped-out probabilities into 16-bit A fragments in registers and
// adds P̃·V with a second mma.sync. Math is f32; P̃ is rounded to the storage type for the mma
// (FlashAttention's choice: relative error ≤ 2⁻⁸ in bf16 per probability, bounds in the tests).
// ctx is rounded once; lse = m + log l in f32.
//
// Windowed attention (shape.window ≥ 0): the block walks only the key tiles its rows' bands meet,
// or all of them when one of its rows has an empty band (attention_band.cuh); in a tile the band
// covers only in part, a pair outside it scores kMaskedKey.
//
// The body is a __host__ __device__ function of one thread (lane_primitives.cuh): the GPU runs it
// from flash_attention.cu's kernel, the CPU tests drive it lane by lane.
#pragma once

#include "attention_band.cuh"
#include "flash_tiles.cuh"

namespace loom_cuda::flash {

template <typename S>
struct ForwardArgs {
  HeadRows<const S> q, k, v;
  HeadRows<S> ctx;
  float* lse;                  // [B, H, T]
  const float* mask;           // [B, T] additive, or null
  const uint8_t* empty_bands;  // [B, ⌈T/16⌉] (attention_band.cuh), or null: no row's band is empty
  AttentionShape shape;
};

template <typename S, int kD>
struct Forward {
  static_assert(kD == 64 || kD == 128, "head dimension 64 or 128");
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kQueries = 16 * kWarps;  // query rows per block
  static constexpr int kKeys = 64;              // keys per tile
  static constexpr int kSharedBytes = static_cast<int>(sizeof(S)) * (kQueries + 4 * kKeys) * kD;

  /// One thread of block (block_x, bh): query rows [64·block_x, 64·block_x + 64) of head bh.
  LOOM_LANE_FN static void run(const ForwardArgs<S>& a, unsigned char* shared, int block_x, int64_t bh,
                               int thread) {
    S* q_tile = reinterpret_cast<S*>(shared);  // [64][kD]
    S* k_tiles = q_tile + kQueries * kD;       // [2][64][kD]
    S* v_tiles = k_tiles + 2 * kKeys * kD;     // [2][64][kD]
    const AttentionShape& shape = a.shape;
    const int64_t T = shape.seq, b = bh / shape.heads, h = bh % shape.heads;
    const int64_t q0 = static_cast<int64_t>(block_x) * kQueries;
    const int lane_index = thread & 31, warp = thread >> 5;
    const band::TileWalk walk = band::query_block_walk(shape, a.empty_bands, b, q0, kQueries, kKeys);
    int n = walk.begin();  // a tile always: the band of row q0 holds key q0

    stage_tile<S, kD, kQueries, kThreads>(q_tile, a.q, b, h, q0, T, thread);
    stage_tile<S, kD, kKeys, kThreads>(k_tiles, a.k, b, h, static_cast<int64_t>(n) * kKeys, T, thread);
    stage_tile<S, kD, kKeys, kThreads>(v_tiles, a.v, b, h, static_cast<int64_t>(n) * kKeys, T, thread);
    lane::cp_async_commit();

    uint32_t q_frag[kD / 16][4];
    float o[kD / 8][4] = {};
    float m[2] = {-__builtin_huge_valf(), -__builtin_huge_valf()}, l[2] = {0.0f, 0.0f};
    int64_t row[2];
    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) row[rr] = q0 + 16 * warp + fragment_row(lane_index, 2 * rr);

    for (int step = 0; n < walk.count; ++step) {
      const int buffer = step & 1, next_n = walk.next(n);
      next_tile(next_n < walk.count, [&] {
        const int64_t next = static_cast<int64_t>(next_n) * kKeys;
        stage_tile<S, kD, kKeys, kThreads>(k_tiles + (buffer ^ 1) * kKeys * kD, a.k, b, h, next, T, thread);
        stage_tile<S, kD, kKeys, kThreads>(v_tiles + (buffer ^ 1) * kKeys * kD, a.v, b, h, next, T, thread);
      });
      if (step == 0) {
        LOOM_UNROLL
        for (int ks = 0; ks < kD / 16; ++ks) load_a<S, kD>(q_frag[ks], q_tile, 16 * warp, ks, lane_index);
      }
      const S* k_tile = k_tiles + buffer * kKeys * kD;
      const S* v_tile = v_tiles + buffer * kKeys * kD;

      float s[kKeys / 8][4] = {};
      LOOM_UNROLL
      for (int ks = 0; ks < kD / 16; ++ks) {
        LOOM_UNROLL
        for (int np = 0; np < kKeys / 16; ++np) {
          uint32_t kb[2][2];
          load_b_pair_rows_n<S, kD>(kb, k_tile, 16 * np, ks, lane_index);
          mma<S>(s[2 * np], q_frag[ks], kb[0]);
          mma<S>(s[2 * np + 1], q_frag[ks], kb[1]);
        }
      }
      online_softmax(a, s, m, l, o, static_cast<int64_t>(n) * kKeys, b, bh, q0 + 16 * warp, row, lane_index);

      add_product<S, kD, kKeys>(o, s, v_tile, lane_index);
      n = next_n;
    }

    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) {
      l[rr] += lane::shfl_xor(l[rr], 1);
      l[rr] += lane::shfl_xor(l[rr], 2);
      if (row[rr] >= T) continue;
      const float inv_l = 1.0f / l[rr];
      S* out = a.ctx.row(b, h, row[rr]);
      LOOM_UNROLL
      for (int dt = 0; dt < kD / 8; ++dt)
        store_pair(out + 8 * dt + fragment_col(lane_index, 0), o[dt][2 * rr] * inv_l,
                   o[dt][2 * rr + 1] * inv_l);
      if ((lane_index & 3) == 0) a.lse[bh * T + row[rr]] = m[rr] + lane::natural_log(l[rr]);
    }
  }

  /// Scores → dropped-out, unnormalised probabilities in place, with the running maximum m, sum l
  /// (this lane's columns only; the row's 4 lanes are summed at the end) and the output rescaled.
  /// The warp's rows start at warp_row0; keys outside a row's band score kMaskedKey.
  LOOM_LANE_FN static void online_softmax(const ForwardArgs<S>& a, float s[kKeys / 8][4], float m[2],
                                          float l[2], float o[kD / 8][4], int64_t j0, int64_t b, int64_t bh,
                                          int64_t warp_row0, const int64_t row[2], int lane_index) {
    const AttentionShape& shape = a.shape;
    const int64_t T = shape.seq;
    // False for FusedAttention (window < 0) and for a tile inside the band of all the warp's rows.
    const bool partial = !band::tile_in_band(shape.window, warp_row0, warp_row0 + 15, j0, j0 + kKeys - 1);
    float tile_max[2] = {-__builtin_huge_valf(), -__builtin_huge_valf()};
    LOOM_UNROLL
    for (int nt = 0; nt < kKeys / 8; ++nt) {
      LOOM_UNROLL
      for (int r = 0; r < 4; ++r) {
        const int64_t j = j0 + 8 * nt + fragment_col(lane_index, r);
        float& score = s[nt][r];
        score = j >= T ? -__builtin_huge_valf()
                : partial && !band::in_band(shape.window, row[r >> 1], j)
                    ? loom::kMaskedKey
                    : score * shape.scale + (a.mask != nullptr ? a.mask[b * T + j] : 0.0f);
        tile_max[r >> 1] = score > tile_max[r >> 1] ? score : tile_max[r >> 1];
      }
    }
    float correction[2];
    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) {
      LOOM_UNROLL
      for (int mask_bits = 1; mask_bits <= 2; mask_bits <<= 1) {
        const float other = lane::shfl_xor(tile_max[rr], mask_bits);
        tile_max[rr] = other > tile_max[rr] ? other : tile_max[rr];
      }
      // Key j0 < T is in every tile (scored, or kMaskedKey outside the band), so the new maximum
      // is finite; the first tile's correction is e^(−∞) = 0.
      const float m_new = m[rr] > tile_max[rr] ? m[rr] : tile_max[rr];
      correction[rr] = lane::fast_exp(m[rr] - m_new);
      m[rr] = m_new;
      l[rr] *= correction[rr];
    }
    LOOM_UNROLL
    for (int dt = 0; dt < kD / 8; ++dt) {
      LOOM_UNROLL
      for (int r = 0; r < 4; ++r) o[dt][r] *= correction[r >> 1];
    }
    LOOM_UNROLL
    for (int nt = 0; nt < kKeys / 8; ++nt) {
      LOOM_UNROLL
      for (int rr = 0; rr < 2; ++rr) {
        float* pair = &s[nt][2 * rr];  // keys j0 + 8·nt + 2t and the next
        KeepPair keep{true, true};
        if (shape.dropout) keep = keeps_of_key_pair(shape, bh, row[rr], j0 + 8 * nt, lane_index);
        const bool kept[2] = {keep.first, keep.second};
        LOOM_UNROLL
        for (int e = 0; e < 2; ++e) {
          const float p = lane::fast_exp(pair[e] - m[rr]);  // 0 for the tail's −∞
          l[rr] += p;
          pair[e] = !shape.dropout ? p : kept[e] ? p * shape.inv_keep : 0.0f;
        }
      }
    }
  }
};

}  // namespace loom_cuda::flash
