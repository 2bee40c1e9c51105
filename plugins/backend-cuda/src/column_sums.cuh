// Deterministic column sums with a period — out[p, c] += Σ_{r mod P = p} term(r, c) — without
// float atomics: the reduction behind bias_grad, the GELU bias gradient and LayerNorm dγ/dβ.
//
// Pass 1 (column_partials_kernel): block (32 columns × 8 row lanes) per (column tile, row tile,
// p), a row tile being ≥ 256 rows and at most 1024 tiles; each lane sums its rows of the tile in increasing
// order, then lane 0 adds the 8 lane sums in order into partial[k][tile][p][c]. Pass 2
// (column_finalize_kernel): L lanes per column, L the least power of two ≥ the tile count up to 32
// (1,024 / L columns per block); lane t adds tiles t, t + L, … in order, then the L lane sums are
// added in lane order into out. With at most 32 tiles that is each tile in tile order; with more,
// 32 lanes share them, so that the 2,048 tiles of the add & norm backward (residual_layernorm.cu)
// are not one thread's loop, and one tile (a position embedding's gradient) is not 32 lanes with
// 31 idle. The order depends on the tile count alone, never on the grid, so results are
// bit-identical run to run (they differ from the CPU's row-order sums only by rounding).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "float_storage.cuh"

namespace loom_cuda {

inline constexpr int kColumnTile = 32;           // columns per block (one per lane)
inline constexpr int kRowLanes = 8;              // threads per column splitting a row tile
inline constexpr int64_t kMinRowsPerTile = 256;  // rows (of one residue p) per partial sum, at least
inline constexpr int64_t kMaxTiles = 1024;       // bounds the scratch and grid.y (≤ 65535)

/// Sizes of a column-sum problem over `rows` rows of `cols` columns with period `period`.
struct ColumnSumPlan {
  int64_t rows_per_residue = 0;  // rows / period
  int64_t period = 1;
  int64_t cols = 0;
  int64_t rows_per_tile = kMinRowsPerTile;
  int64_t tiles = 0;

  static ColumnSumPlan make(int64_t rows, int64_t cols, int64_t period) {
    ColumnSumPlan plan;
    plan.period = period;
    plan.cols = cols;
    plan.rows_per_residue = period > 0 ? rows / period : 0;
    const int64_t spread = (plan.rows_per_residue + kMaxTiles - 1) / kMaxTiles;
    plan.rows_per_tile = spread > kMinRowsPerTile ? spread : kMinRowsPerTile;
    plan.tiles = (plan.rows_per_residue + plan.rows_per_tile - 1) / plan.rows_per_tile;
    if (plan.tiles < 1) plan.tiles = 1;
    return plan;
  }
  /// Floats of scratch for `outputs` simultaneous sums.
  size_t scratch_floats(int outputs) const {
    return static_cast<size_t>(outputs) * static_cast<size_t>(tiles * period * cols);
  }
};

/// Pass 1. `term(row, col, values)` writes the K values row `row` contributes to column `col`.
template <int K, typename Term>
__global__ void column_partials_kernel(Term term, ColumnSumPlan plan, float* partial) {
  __shared__ float lane_sums[K][kRowLanes][kColumnTile];
  const int64_t col = blockIdx.x * int64_t{kColumnTile} + threadIdx.x;
  const int64_t tile = blockIdx.y, p = blockIdx.z;
  float acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  if (col < plan.cols) {
    const int64_t begin = tile * plan.rows_per_tile;
    const int64_t end = begin + plan.rows_per_tile < plan.rows_per_residue ? begin + plan.rows_per_tile
                                                                           : plan.rows_per_residue;
    for (int64_t q = begin + threadIdx.y; q < end; q += kRowLanes) {
      float values[K];
      term(p + plan.period * q, col, values);
#pragma unroll
      for (int k = 0; k < K; ++k) acc[k] += values[k];
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) lane_sums[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && col < plan.cols) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float total = 0.0f;
      for (int lane = 0; lane < kRowLanes; ++lane) total += lane_sums[k][lane][threadIdx.x];
      partial[((k * plan.tiles + tile) * plan.period + p) * plan.cols + col] = total;
    }
  }
}

inline constexpr int kFinalizeThreads = 1024;  // pass 2: threads per block (columns × lanes)
inline constexpr int kFinalizeMaxLanes = 32;   // pass 2: threads per column splitting the tiles, at most

/// Pass 2's outputs: up to three sums in one launch, a null one skipped.
struct FinalizeOutputs {
  float* sums[3];
};

/// Pass 2: out.sums[k][i] += Σ_tile partial[(k·tiles + tile)·count + i] for k < outputs and i < count
/// = period·cols, in the fixed order above (launched with blockDim (1,024 / L, L)).
__global__ void column_finalize_kernel(const float* partial, int64_t tiles, int64_t count, FinalizeOutputs out);
void finalize_column_sums(const float* partial, int64_t tiles, int64_t count, const FinalizeOutputs& out,
                          int outputs, cudaStream_t stream);

/// Launches both passes for K outputs: out[k] (period·cols floats each) accumulates sum k.
/// `scratch` holds plan.scratch_floats(K) floats. Period ≤ 65535 (a grid dimension).
template <int K, typename Term>
void accumulate_column_sums(Term term, const ColumnSumPlan& plan, float* scratch, float* const out[K],
                            cudaStream_t stream) {
  if (plan.cols == 0 || plan.period == 0) return;
  const dim3 block(kColumnTile, kRowLanes);
  const dim3 grid(static_cast<unsigned>((plan.cols + kColumnTile - 1) / kColumnTile),
                  static_cast<unsigned>(plan.tiles), static_cast<unsigned>(plan.period));
  column_partials_kernel<K, Term><<<grid, block, 0, stream>>>(term, plan, scratch);
  static_assert(K <= 3, "at most three sums per finalize");
  FinalizeOutputs outputs{{nullptr, nullptr, nullptr}};
  for (int k = 0; k < K; ++k) outputs.sums[k] = out[k];
  finalize_column_sums(scratch, plan.tiles, plan.period * plan.cols, outputs, K, stream);
}

/// The plain term: x[row, col] of a dense row-major [rows, cols] f32 matrix.
struct DenseColumnTerm {
  const float* x;
  int64_t cols;
  __device__ void operator()(int64_t row, int64_t col, float* values) const {
    values[0] = x[row * cols + col];
  }
};

/// The plain term, also storing each element it reads rounded to S (float_storage.cuh's from_float,
/// the cast kernels' rounding) into the same place of `copy`: every element is read exactly once by
/// pass 1 when rows is a multiple of the period, so the copy is complete.
template <typename S>
struct DenseColumnCopyTerm {
  const float* x;
  S* copy;
  int64_t cols;
  __device__ void operator()(int64_t row, int64_t col, float* values) const {
    const float v = x[row * cols + col];
    copy[row * cols + col] = from_float<S>(v);
    values[0] = v;
  }
};

}  // namespace loom_cuda
