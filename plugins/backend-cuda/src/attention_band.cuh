// The sliding-window band of windowed attention (loom/sdk/ops/windowed_attention.hpp) as every
// attention kernel applies it: query i attends to key j only when |i − j| ≤ window (window < 0:
// every key, FusedAttention; a call's window reaching every key comes here as −1,
// loom_backend::effective_window). A pair outside the band scores exactly kMaskedKey.
//
// Skipping: a block owns a range of query rows (or of keys) and walks the other side in tiles; a
// tile that meets none of its rows' bands is not staged or multiplied at all (TileWalk). Every
// skipped pair would have scored kMaskedKey, so in a row with an allowed key it would have had
// probability exactly 0 (e^(kMaskedKey − m) underflows) and the row's sums are what they would
// have been. A row with no allowed key in its band (a padding query whose band holds only padding
// keys) is different: every score in the row is kMaskedKey, and the header makes it uniform over
// all T keys, skipped ones included. Such rows are found before the kernels run, from the key
// mask alone (EmptyBands: a flag per 16 query rows), and handled by walking more tiles:
//   - a block owning query rows (forward, dQ) walks every key tile when one of its rows is
//     flagged, so the row's online softmax sees all T scores of kMaskedKey (probability 1/T each,
//     as in FusedAttention's fully masked rows); its other rows get exact zeros from the extra
//     tiles, so their results do not change;
//   - a block owning keys (dK, dV) also walks every query tile holding a flagged row: there
//     p = 1/T for every key, as the backward recomputes it for a row whose lse is kMaskedKey.
// Without a key mask no band is empty (key i is in row i's band), and no flags are made.
//
// Plain C++ with LOOM_LANE_FN functions: the kernels and the CPU tests (tests/emulated) share it.
#pragma once

#include <cstdint>

#include "attention_shape.hpp"
#include "lane_primitives.cuh"
#include "loom/sdk/backend.hpp"

namespace loom_cuda::band {

/// Query rows per empty-band flag.
inline constexpr int kFlagRows = 16;

/// Flags of one batch row: ⌈T / kFlagRows⌉.
LOOM_LANE_FN int64_t flag_groups(int64_t seq) {
  return (seq + kFlagRows - 1) / kFlagRows;
}

/// Whether key j is in query i's band.
LOOM_LANE_FN bool in_band(int64_t window, int64_t i, int64_t j) {
  return window < 0 || (i - j <= window && j - i <= window);
}

/// Whether every pair of queries [i0, i1] × keys [j0, j1] is in the band: then a tile needs no
/// per-element test.
LOOM_LANE_FN bool tile_in_band(int64_t window, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  return window < 0 || (i1 - j0 <= window && j1 - i0 <= window);
}

/// The tiles of `tile_rows` rows over [0, T) a block visits, in increasing order: the band tiles
/// [first, last], and any tile holding a row flagged in `flags` (null: none). Every thread of a
/// block computes the same walk (from its block's indices and the same flags), so the block stays
/// in step at its barriers.
struct TileWalk {
  int count;             // tiles over [0, T)
  int first, last;       // band tiles
  const uint8_t* flags;  // the walked rows' empty-band flags, or null
  int tile_rows;
  int64_t seq;

  LOOM_LANE_FN bool visits(int n) const {
    if (n >= first && n <= last) return true;
    if (flags == nullptr) return false;
    const int64_t r0 = static_cast<int64_t>(n) * tile_rows, end = r0 + tile_rows < seq ? r0 + tile_rows : seq;
    for (int64_t g = r0 / kFlagRows; g <= (end - 1) / kFlagRows; ++g)
      if (flags[g] != 0) return true;
    return false;
  }
  /// The first visited tile after n, or count.
  LOOM_LANE_FN int next(int n) const {
    do {
      ++n;
    } while (n < count && !visits(n));
    return n;
  }
  /// The first visited tile, or count.
  LOOM_LANE_FN int begin() const { return visits(0) ? 0 : next(0); }
};

/// Tiles of the other side meeting the bands of own rows [r0, r0 + rows) ∩ [0, T): [first, last].
LOOM_LANE_FN TileWalk band_tiles(int64_t window, int64_t seq, int64_t r0, int rows, int tile_rows) {
  const int count = static_cast<int>((seq + tile_rows - 1) / tile_rows);
  if (window < 0) return TileWalk{count, 0, count - 1, nullptr, tile_rows, seq};
  const int64_t r1 = r0 + rows - 1 < seq - 1 ? r0 + rows - 1 : seq - 1;
  const int64_t low = r0 - window > 0 ? r0 - window : 0, high = r1 + window < seq - 1 ? r1 + window : seq - 1;
  return TileWalk{
      count, static_cast<int>(low / tile_rows), static_cast<int>(high / tile_rows), nullptr, tile_rows, seq};
}

/// A block owning query rows [q0, q0 + rows) of batch row b, walking key tiles of `tile_keys`: the
/// tiles meeting its rows' bands, or all of them when one of its rows has an empty band
/// (empty_bands: [B, flag_groups(T)], or null when no band is empty).
LOOM_LANE_FN TileWalk query_block_walk(const AttentionShape& shape, const uint8_t* empty_bands, int64_t b,
                                       int64_t q0, int rows, int tile_keys) {
  TileWalk walk = band_tiles(shape.window, shape.seq, q0, rows, tile_keys);
  if (empty_bands != nullptr && shape.window >= 0) {
    const uint8_t* flags = empty_bands + b * flag_groups(shape.seq);
    const int64_t end = q0 + rows < shape.seq ? q0 + rows : shape.seq;
    for (int64_t g = q0 / kFlagRows; g <= (end - 1) / kFlagRows; ++g)
      if (flags[g] != 0) {
        walk.first = 0;
        walk.last = walk.count - 1;
        break;
      }
  }
  return walk;
}

/// A block owning keys [j0, j0 + rows) of batch row b, walking query tiles of `tile_queries`: the
/// tiles meeting its keys' bands and every tile holding a query row whose band is empty.
LOOM_LANE_FN TileWalk key_block_walk(const AttentionShape& shape, const uint8_t* empty_bands, int64_t b,
                                     int64_t j0, int rows, int tile_queries) {
  TileWalk walk = band_tiles(shape.window, shape.seq, j0, rows, tile_queries);
  if (empty_bands != nullptr && shape.window >= 0) walk.flags = empty_bands + b * flag_groups(shape.seq);
  return walk;
}

/// Bits a .. z (0 ≤ a ≤ z ≤ 31) of a 32-bit word.
LOOM_LANE_FN uint32_t bit_range(int a, int z) {
  return (2u << z) - (1u << a);  // 2u << 31 wraps to 0: bits a .. 31
}

struct EmptyBandArgs {
  const float* mask;  // [B, T] additive
  uint8_t* flags;     // [B, flag_groups(T)]
  AttentionShape shape;
};

/// flags[b, g] = 1 when one of query rows [16g, 16g + 16) ∩ [0, T) of batch row b has no allowed
/// key (mask[b, j] > kMaskedKey / 2, as backend/cpu tells a masked key) with |i − j| ≤ window,
/// else 0. Grid (⌈T / 128⌉, B), one thread per query row: a warp reads the union of its 32 rows'
/// bands 32 keys at a time, a ballot makes the chunk's allowed keys one word, and each lane tests
/// the bits of its own band, so a row costs (64 + 2·window) / 32 steps, padding or not.
struct EmptyBands {
  static constexpr int kThreads = 128, kSharedBytes = 0;

  LOOM_LANE_FN static void run(const EmptyBandArgs& a, unsigned char*, int block_x, int64_t b, int thread) {
    const int64_t T = a.shape.seq, w = a.shape.window;
    const int lane_index = thread & 31;
    const int64_t r0 =
        static_cast<int64_t>(block_x) * kThreads + (thread - lane_index);  // the warp's first row
    if (r0 >= T) return;                                                   // the whole warp
    const int64_t i = r0 + lane_index;
    const int64_t low = r0 - w > 0 ? r0 - w : 0, high = r0 + 31 + w < T - 1 ? r0 + 31 + w : T - 1;
    bool found = false;
    for (int64_t c0 = low; c0 <= high; c0 += 32) {
      const int64_t j = c0 + lane_index;
      const uint32_t allowed = lane::ballot(j <= high && a.mask[b * T + j] > 0.5f * loom::kMaskedKey);
      const int64_t from = i - w > c0 ? i - w : c0, to = i + w < c0 + 31 ? i + w : c0 + 31;
      if (from <= to)
        found = found || (allowed & bit_range(static_cast<int>(from - c0), static_cast<int>(to - c0))) != 0;
    }
    const uint32_t empty = lane::ballot(i < T && !found);
    const int64_t groups = flag_groups(T), g = r0 / kFlagRows;  // r0 is a multiple of 32: groups g, g + 1
    if (lane_index == 0) a.flags[b * groups + g] = (empty & 0xffffu) != 0 ? 1 : 0;
    if (lane_index == 16 && g + 1 < groups) a.flags[b * groups + g + 1] = (empty >> 16) != 0 ? 1 : 0;
  }
};

}  // namespace loom_cuda::band
