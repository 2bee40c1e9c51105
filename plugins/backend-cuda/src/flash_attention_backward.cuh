// Fused attention backward on Tensor Cores, for 16-bit storage and head dimension 64 or 128.
//
// With P = softmax(S) recomputed from q, k and the forward's lse, P̃ = P ⊙ keep/(1 − p):
//   dP̃ = dO·Vᵀ,  dS = P ⊙ (keep/(1 − p)·dP̃ − δ)  (δ_i = Σ_c dO[i,c]·ctx[i,c], a separate pass:
//   flash_attention_delta.cuh),
//   dV = P̃ᵀ·dO,  dK = scale·dSᵀ·Q,  dQ = scale·dS·K.
// Two kernels, each output element summed by one thread in a fixed order (deterministic, no
// atomics; dQ is recomputed rather than accumulated across blocks):
//   KeyGrads   a block of 4 warps owns 64 keys (16 per warp, K and V staged once) and walks the
//              queries in tiles (64 for d = 64, 32 for d = 128, so the accumulators fit in
//              registers), Q and dO tiles double-buffered with cp.async. Per tile a warp computes
//              Sᵀ = K·Qᵀ and dP̃ᵀ = V·dOᵀ (16 keys × tile), turns them into P̃ᵀ and dSᵀ in
//              registers, and adds P̃ᵀ·dO to dV and dSᵀ·Q to dK.
//   QueryGrads a block owns 64 queries (16 per warp) and walks the keys in tiles (64 / 32): S = Q·Kᵀ,
//              dP̃ = dO·Vᵀ, dS, and dQ += dS·K.
// P̃ and dS are rounded to the storage type for their mma (as in FlashAttention), and so is dO
// when it comes in f32; everything else is f32. Bounds in the tests.
//
// Windowed attention (shape.window ≥ 0, attention_band.cuh): KeyGrads walks the query tiles its
// keys' bands meet and those holding a query row whose band is empty (uniform over all T keys, so
// it reaches every key); QueryGrads the key tiles its rows' bands meet, or all of them when one
// of its rows has an empty band. A pair outside the band scores kMaskedKey.
#pragma once

#include "attention_band.cuh"
#include "flash_tiles.cuh"

namespace loom_cuda::flash {

/// G: the incoming gradient's storage (f32 or S).
template <typename S, typename G>
struct BackwardArgs {
  HeadRows<const S> q, k, v;
  HeadRows<const G> d_ctx;
  const float* lse;            // [B, H, T], the forward's
  const float* delta;          // [B, H, T], Σ_c d_ctx·ctx
  const float* mask;           // [B, T] additive, or null
  const uint8_t* empty_bands;  // [B, ⌈T/16⌉] (attention_band.cuh), or null: no row's band is empty
  HeadRows<float> dq, dk, dv;
  AttentionShape shape;
};

/// P_ij from its scaled, masked score and the row's lse (uniform 1/T for rows whose keys are all
/// masked), and what dropout (`keep`: its decision for (i, j)) makes of it and of dP̃_ij:
/// (P̃_ij, dS_ij).
struct ProbabilityGradient {
  float dropped, score_gradient;
};
LOOM_LANE_FN ProbabilityGradient probability_gradient(const AttentionShape& shape, float score, float lse,
                                                      float delta, float dp_dropped, bool keep) {
  const float p = all_keys_masked(lse) ? 1.0f / static_cast<float>(shape.seq) : lane::fast_exp(score - lse);
  const float dp = keep ? dp_dropped * shape.inv_keep : 0.0f;
  return ProbabilityGradient{keep ? p * shape.inv_keep : 0.0f, p * (dp - delta)};
}

template <typename S, typename G, int kD>
struct KeyGrads {
  static_assert(kD == 64 || kD == 128, "head dimension 64 or 128");
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kKeys = 16 * kWarps;            // keys per block
  static constexpr int kQueries = kD == 64 ? 64 : 32;  // queries per tile
  static constexpr int kSharedBytes = static_cast<int>(sizeof(S)) * (2 * kKeys + 4 * kQueries) * kD +
                                      static_cast<int>(sizeof(float)) * 4 * kQueries;

  LOOM_LANE_FN static void stage_queries(const BackwardArgs<S, G>& a, unsigned char* shared, int buffer,
                                         int64_t b, int64_t h, int64_t bh, int64_t first, int thread) {
    const int64_t T = a.shape.seq;
    S* q_tile = reinterpret_cast<S*>(shared) + (2 * kKeys + buffer * kQueries) * kD;
    S* g_tile = reinterpret_cast<S*>(shared) + (2 * kKeys + (2 + buffer) * kQueries) * kD;
    float* rows = reinterpret_cast<float*>(reinterpret_cast<S*>(shared) + (2 * kKeys + 4 * kQueries) * kD);
    stage_tile<S, kD, kQueries, kThreads>(q_tile, a.q, b, h, first, T, thread);
    stage_tile<S, kD, kQueries, kThreads>(g_tile, a.d_ctx, b, h, first, T, thread);
    for (int r = thread; r < kQueries; r += kThreads) {
      const bool inside = first + r < T;
      rows[buffer * 2 * kQueries + r] = inside ? a.lse[bh * T + first + r] : 0.0f;
      rows[buffer * 2 * kQueries + kQueries + r] = inside ? a.delta[bh * T + first + r] : 0.0f;
    }
  }

  /// One thread of block (block_x, bh): keys [64·block_x, 64·block_x + 64) of head bh.
  LOOM_LANE_FN static void run(const BackwardArgs<S, G>& a, unsigned char* shared, int block_x, int64_t bh,
                               int thread) {
    S* k_tile = reinterpret_cast<S*>(shared);  // [64][kD]
    S* v_tile = k_tile + kKeys * kD;           // [64][kD]
    const AttentionShape& shape = a.shape;
    const int64_t T = shape.seq, b = bh / shape.heads, h = bh % shape.heads;
    const int64_t j0 = static_cast<int64_t>(block_x) * kKeys;
    const int lane_index = thread & 31, warp = thread >> 5;
    const band::TileWalk walk = band::key_block_walk(shape, a.empty_bands, b, j0, kKeys, kQueries);
    int n = walk.begin();  // a tile always: the band of key j0 holds query j0

    stage_tile<S, kD, kKeys, kThreads>(k_tile, a.k, b, h, j0, T, thread);
    stage_tile<S, kD, kKeys, kThreads>(v_tile, a.v, b, h, j0, T, thread);
    stage_queries(a, shared, 0, b, h, bh, static_cast<int64_t>(n) * kQueries, thread);
    lane::cp_async_commit();

    float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
    int64_t key[2];
    float key_bias[2];
    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) {
      key[rr] = j0 + 16 * warp + fragment_row(lane_index, 2 * rr);
      key_bias[rr] = a.mask != nullptr && key[rr] < T ? a.mask[b * T + key[rr]] : 0.0f;
    }

    for (int step = 0; n < walk.count; ++step) {
      const int buffer = step & 1, next_n = walk.next(n);
      next_tile(next_n < walk.count, [&] {
        stage_queries(a, shared, buffer ^ 1, b, h, bh, static_cast<int64_t>(next_n) * kQueries, thread);
      });
      const S* q_tile = k_tile + (2 * kKeys + buffer * kQueries) * kD;
      const S* g_tile = k_tile + (2 * kKeys + (2 + buffer) * kQueries) * kD;
      const float* lse_tile =
          reinterpret_cast<const float*>(k_tile + (2 * kKeys + 4 * kQueries) * kD) + buffer * 2 * kQueries;
      const float* delta_tile = lse_tile + kQueries;

      // Sᵀ = K·Qᵀ and dP̃ᵀ = V·dOᵀ for this warp's 16 keys (rows) × the tile's queries (columns).
      float st[kQueries / 8][4] = {}, dpt[kQueries / 8][4] = {};
      add_product_transposed<S, kD, kQueries>(st, k_tile, 16 * warp, q_tile, lane_index);
      add_product_transposed<S, kD, kQueries>(dpt, v_tile, 16 * warp, g_tile, lane_index);
      const int64_t i0 = static_cast<int64_t>(n) * kQueries;
      // False for FusedAttention (window < 0) and for a tile inside the band of all the warp's keys.
      const bool partial =
          !band::tile_in_band(shape.window, i0, i0 + kQueries - 1, j0 + 16 * warp, j0 + 16 * warp + 15);
      LOOM_UNROLL
      for (int nt = 0; nt < kQueries / 8; ++nt) {
        LOOM_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * nt + fragment_col(lane_index, e);
          const int64_t i = i0 + c;
          KeepPair keep{true, true};
          if (shape.dropout) keep = keeps_of_key_rows(shape, bh, i, j0 + 16 * warp, lane_index);
          const bool kept[2] = {keep.first, keep.second};
          LOOM_UNROLL
          for (int rr = 0; rr < 2; ++rr) {
            const int r = 2 * rr + e;
            if (i >= T || key[rr] >= T) {  // no such probability: contributes nothing
              st[nt][r] = dpt[nt][r] = 0.0f;
              continue;
            }
            const float score = partial && !band::in_band(shape.window, i, key[rr])
                                    ? loom::kMaskedKey
                                    : st[nt][r] * shape.scale + key_bias[rr];
            const ProbabilityGradient pg =
                probability_gradient(shape, score, lse_tile[c], delta_tile[c], dpt[nt][r], kept[rr]);
            st[nt][r] = pg.dropped;
            dpt[nt][r] = pg.score_gradient;
          }
        }
      }

      // dV += P̃ᵀ·dO, dK += dSᵀ·Q (the queries are the reduction dimension).
      add_product<S, kD, kQueries>(dv, st, g_tile, lane_index);
      add_product<S, kD, kQueries>(dk, dpt, q_tile, lane_index);
      n = next_n;
    }

    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) {
      if (key[rr] >= T) continue;
      float* dk_row = a.dk.row(b, h, key[rr]);
      float* dv_row = a.dv.row(b, h, key[rr]);
      LOOM_UNROLL
      for (int dt = 0; dt < kD / 8; ++dt) {
        LOOM_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * dt + fragment_col(lane_index, e);
          dk_row[c] = shape.scale * dk[dt][2 * rr + e];
          dv_row[c] = dv[dt][2 * rr + e];
        }
      }
    }
  }
};

template <typename S, typename G, int kD>
struct QueryGrads {
  static_assert(kD == 64 || kD == 128, "head dimension 64 or 128");
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kQueries = 16 * kWarps;      // queries per block
  static constexpr int kKeys = kD == 64 ? 64 : 32;  // keys per tile
  static constexpr int kSharedBytes = static_cast<int>(sizeof(S)) * (2 * kQueries + 4 * kKeys) * kD;

  /// One thread of block (block_x, bh): queries [64·block_x, 64·block_x + 64) of head bh.
  LOOM_LANE_FN static void run(const BackwardArgs<S, G>& a, unsigned char* shared, int block_x, int64_t bh,
                               int thread) {
    S* q_tile = reinterpret_cast<S*>(shared);  // [64][kD]
    S* g_tile = q_tile + kQueries * kD;        // [64][kD]
    S* k_tiles = g_tile + kQueries * kD;       // [2][kKeys][kD]
    S* v_tiles = k_tiles + 2 * kKeys * kD;     // [2][kKeys][kD]
    const AttentionShape& shape = a.shape;
    const int64_t T = shape.seq, b = bh / shape.heads, h = bh % shape.heads;
    const int64_t q0 = static_cast<int64_t>(block_x) * kQueries;
    const int lane_index = thread & 31, warp = thread >> 5;
    const band::TileWalk walk = band::query_block_walk(shape, a.empty_bands, b, q0, kQueries, kKeys);
    int n = walk.begin();  // a tile always: the band of row q0 holds key q0

    stage_tile<S, kD, kQueries, kThreads>(q_tile, a.q, b, h, q0, T, thread);
    stage_tile<S, kD, kQueries, kThreads>(g_tile, a.d_ctx, b, h, q0, T, thread);
    stage_tile<S, kD, kKeys, kThreads>(k_tiles, a.k, b, h, static_cast<int64_t>(n) * kKeys, T, thread);
    stage_tile<S, kD, kKeys, kThreads>(v_tiles, a.v, b, h, static_cast<int64_t>(n) * kKeys, T, thread);
    lane::cp_async_commit();

    float dq[kD / 8][4] = {};
    int64_t row[2];
    float row_lse[2], row_delta[2];
    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) {
      row[rr] = q0 + 16 * warp + fragment_row(lane_index, 2 * rr);
      row_lse[rr] = row[rr] < T ? a.lse[bh * T + row[rr]] : 0.0f;
      row_delta[rr] = row[rr] < T ? a.delta[bh * T + row[rr]] : 0.0f;
    }

    for (int step = 0; n < walk.count; ++step) {
      const int buffer = step & 1, next_n = walk.next(n);
      next_tile(next_n < walk.count, [&] {
        const int64_t next = static_cast<int64_t>(next_n) * kKeys;
        stage_tile<S, kD, kKeys, kThreads>(k_tiles + (buffer ^ 1) * kKeys * kD, a.k, b, h, next, T, thread);
        stage_tile<S, kD, kKeys, kThreads>(v_tiles + (buffer ^ 1) * kKeys * kD, a.v, b, h, next, T, thread);
      });
      const S* k_tile = k_tiles + buffer * kKeys * kD;
      const S* v_tile = v_tiles + buffer * kKeys * kD;

      float s[kKeys / 8][4] = {}, dp[kKeys / 8][4] = {};
      add_product_transposed<S, kD, kKeys>(s, q_tile, 16 * warp, k_tile, lane_index);
      add_product_transposed<S, kD, kKeys>(dp, g_tile, 16 * warp, v_tile, lane_index);
      const int64_t j0 = static_cast<int64_t>(n) * kKeys;
      // False for FusedAttention (window < 0) and for a tile inside the band of all the warp's rows.
      const bool partial =
          !band::tile_in_band(shape.window, q0 + 16 * warp, q0 + 16 * warp + 15, j0, j0 + kKeys - 1);
      LOOM_UNROLL
      for (int nt = 0; nt < kKeys / 8; ++nt) {
        LOOM_UNROLL
        for (int rr = 0; rr < 2; ++rr) {
          const int64_t i = row[rr],
                        j = j0 + 8 * nt + fragment_col(lane_index, 0);  // this lane's pair: j, j + 1
          KeepPair keep{true, true};
          if (shape.dropout) keep = keeps_of_key_pair(shape, bh, i, j0 + 8 * nt, lane_index);
          const bool kept[2] = {keep.first, keep.second};
          LOOM_UNROLL
          for (int e = 0; e < 2; ++e) {
            float& element = s[nt][2 * rr + e];
            if (i >= T || j + e >= T) {
              element = 0.0f;
              continue;
            }
            const float bias = a.mask != nullptr ? a.mask[b * T + j + e] : 0.0f;
            const float score = partial && !band::in_band(shape.window, i, j + e)
                                    ? loom::kMaskedKey
                                    : element * shape.scale + bias;
            element =
                probability_gradient(shape, score, row_lse[rr], row_delta[rr], dp[nt][2 * rr + e], kept[e])
                    .score_gradient;
          }
        }
      }

      // dQ += dS·K (the keys are the reduction dimension).
      add_product<S, kD, kKeys>(dq, s, k_tile, lane_index);
      n = next_n;
    }

    LOOM_UNROLL
    for (int rr = 0; rr < 2; ++rr) {
      if (row[rr] >= T) continue;
      float* dq_row = a.dq.row(b, h, row[rr]);
      LOOM_UNROLL
      for (int dt = 0; dt < kD / 8; ++dt) {
        LOOM_UNROLL
        for (int e = 0; e < 2; ++e)
          dq_row[8 * dt + fragment_col(lane_index, e)] = shape.scale * dq[dt][2 * rr + e];
      }
    }
  }
};

}  // namespace loom_cuda::flash
