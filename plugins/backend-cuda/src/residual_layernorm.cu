// ResidualLayerNorm (loom/sdk/ops/residual_layernorm.hpp): a post-LN layer's "add & norm" in one
// row kernel per direction, instead of bias_add, dropout_forward, add and layernorm_forward (four
// passes over [rows, C], three of them writing it) and, backward, layernorm's dx and
// dropout_backward.
//
// Row kernels: one block per row, the grid striding over rows. A thread owns the same quads of
// four columns (row_quads.cuh: float4 accesses when C % 4 == 0 and the views are aligned, scalar
// ones otherwise) in every row and keeps them in registers between the passes, so each input is
// read from memory once: the sum, then its mean and the variance of (sum − mean) from registers
// (the two-pass formula of layernorm.cu), block sums in a fixed tree (warp_reductions.cuh).
// Registers bound a row to 8 quads × 512 threads: C ≤ 16384.
//
// Dropout draws dropout.cu's words: element (r, c) uses word offset + r·C + c (philox_words4 gives
// a quad's four). The sum is rounded as the unfused ops round it — y + bias, × 1/(1 − p), + residual,
// each with an explicit _rn intrinsic so nvcc contracts nothing into an FMA — so `sum` is
// bit-identical to bias_add, dropout_forward and add on either backend.
//
// Backward: for rows of up to 4096 columns (four quads a thread) one kernel does it all. A block
// takes tiles of consecutive rows (RowTiles: a fixed function of the row count, never of the
// grid), computes each row's d_sum and d_branch as above and adds the row's dγ (d_out·x̂), dβ
// (d_out) and dbias (d_branch) terms into per-column sums in its registers, rows in order; each
// tile's sums go to a partial buffer that column_finalize_kernel adds up in a fixed order. d_out and
// the saved sum are then read once, and d_branch never read back. Wider rows take three passes:
// layernorm_backward's column sums of d_out·x̂ and d_out (column_sums.cuh), enqueued before the row
// kernel so d_sum may alias d_out, the row kernel, and bias_grad's column sums of d_branch.
// ResidualLayerNormBackwardCopy's row kernel also stores d_branch's 16-bit copy, rounded once from
// the same registers, so the layer's GEMMs need no cast pass.
// Every reduction has a fixed order: results do not depend on the grid.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "column_sums.cuh"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "layernorm_parameter_grads.cuh"
#include "loom/sdk/philox.hpp"
#include "loom_backend/residual_layernorm_contract.hpp"
#include "op_preamble.cuh"
#include "philox_device.cuh"
#include "row_quads.cuh"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int kMaxThreads = 512;                                       // per row block
constexpr int kMaxQuadsPerThread = 8;                                  // register budget under kMaxThreads
constexpr int64_t kMaxColumns = 4 * kMaxQuadsPerThread * kMaxThreads;  // 16384

/// The dropout of one call: element (r, c) is kept when word offset + r·C + c ≥ threshold.
struct RowDropout {
  bool on;  // p > 0
  uint32_t threshold;
  float scale;  // 1/(1 − p), computed as dropout.cu computes it
  uint64_t seed, offset;

  static RowDropout make(float p, uint64_t seed, uint64_t offset) {
    return {p > 0.0f, loom::dropout_threshold(p), 1.0f / (1.0f - p), seed, offset};
  }
  /// v scaled or zeroed as dropout_forward/backward do, for the four elements from `element`
  /// (= r·C + 4q) on.
  __device__ void apply(int64_t element, float (&v)[4]) const {
    if (!on) return;
    const uint4 w = philox_words4(seed, offset + static_cast<uint64_t>(element));
    const uint32_t word[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = word[j] >= threshold ? __fmul_rn(v[j], scale) : 0.0f;
  }
};

/// sum = dropout(y + bias) + residual, out = LayerNorm(sum) (and its 16-bit copy), mean, rstd.
/// sum may alias y or residual: a thread reads a quad of both before writing it to sum.
template <int kQuads, typename SC>
__global__ void __launch_bounds__(kMaxThreads)
    bias_dropout_residual_layernorm_kernel(const float* y, const float* bias, const float* residual,
                                           RowDropout dropout, const float* gamma, const float* beta,
                                           float eps, float* sum, float* out, SC* out_compute, float* mean,
                                           float* rstd, int64_t rows, int64_t cols, bool vector) {
  __shared__ float reduce[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform: block_sum's syncs are safe
    const int64_t base = row * cols;
    float x[kQuads][4];
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
      const int64_t q = threadIdx.x + int64_t{k} * blockDim.x;
      if (quad_width(q, cols) == 0) {  // past the row: zeros, which add nothing to the sums
#pragma unroll
        for (int j = 0; j < 4; ++j) x[k][j] = 0.0f;
        continue;
      }
      float r[4], b[4];
      load_quad(y + base, q, cols, vector, x[k]);  // columns ≥ C read 0 and stay 0 below
      load_quad(residual + base, q, cols, vector, r);
      if (bias != nullptr) {
        load_quad(bias, q, cols, vector, b);
#pragma unroll
        for (int j = 0; j < 4; ++j) x[k][j] = __fadd_rn(x[k][j], b[j]);
      }
      dropout.apply(base + 4 * q, x[k]);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        x[k][j] = __fadd_rn(x[k][j], r[j]);
        total += x[k][j];
      }
      store_quad(sum + base, q, cols, vector, x[k]);
    }
    const float m = block_sum(total, reduce) / static_cast<float>(cols);
    float squares = 0.0f;
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
      const int width = quad_width(threadIdx.x + int64_t{k} * blockDim.x, cols);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float d = j < width ? x[k][j] - m : 0.0f;
        squares += d * d;
      }
    }
    const float s = rsqrtf(block_sum(squares, reduce) / static_cast<float>(cols) + eps);
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
      const int64_t q = threadIdx.x + int64_t{k} * blockDim.x;
      if (quad_width(q, cols) == 0) continue;
      float g[4], bt[4], o[4];
      load_quad(gamma, q, cols, vector, g);
      load_quad(beta, q, cols, vector, bt);
#pragma unroll
      for (int j = 0; j < 4; ++j) o[j] = (x[k][j] - m) * s * g[j] + bt[j];
      store_quad(out + base, q, cols, vector, o);
      if (out_compute != nullptr) store_quad(out_compute + base, q, cols, vector, o);  // rounded once
    }
    if (threadIdx.x == 0) {
      mean[row] = m;
      rstd[row] = s;
    }
  }
}

/// The backward's arguments a row needs.
template <typename SC>
struct InputGradRows {
  const float *d_out, *sum, *gamma, *mean, *rstd;
  RowDropout dropout;
  float *d_sum, *d_branch;
  SC* d_branch_compute;  // null: no copy
  int64_t cols;
  bool vector;
};

/// One row: d_sum = LayerNorm's input gradient (layernorm.cu's formula), d_branch = dropout'(d_sum)
/// (and its 16-bit copy when asked). The thread's quads of d_out, x̂ and d_branch stay in `dy`,
/// `xhat` and `branch` for the caller's column sums (their columns past the row hold no meaningful
/// value: the caller skips them). d_sum may alias d_out: a thread reads a quad of d_out before
/// writing it to d_sum. Every thread of the block calls it.
template <int kQuads, typename SC>
__device__ __forceinline__ void input_grad_row(const InputGradRows<SC>& a, int64_t row, float* reduce,
                                               float (&dy)[kQuads][4], float (&xhat)[kQuads][4],
                                               float (&branch)[kQuads][4]) {
  const int64_t base = row * a.cols;
  const float m = a.mean[row], s = a.rstd[row];
  float dnorm[kQuads][4];
  float dnorm_sum = 0.0f, dnorm_xhat_sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kQuads; ++k) {
    const int64_t q = threadIdx.x + int64_t{k} * blockDim.x;
    const int width = quad_width(q, a.cols);
#pragma unroll
    for (int j = 0; j < 4; ++j) dy[k][j] = dnorm[k][j] = xhat[k][j] = branch[k][j] = 0.0f;
    if (width == 0) continue;  // past the row: zeros, which add nothing to the sums
    float x[4], g[4];
    load_quad(a.d_out + base, q, a.cols, a.vector, dy[k]);
    load_quad(a.sum + base, q, a.cols, a.vector, x);
    load_quad(a.gamma, q, a.cols, a.vector, g);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      dnorm[k][j] = dy[k][j] * g[j];  // 0 beyond C: loads read 0 there
      xhat[k][j] = j < width ? (x[j] - m) * s : 0.0f;
      dnorm_sum += dnorm[k][j];
      dnorm_xhat_sum += dnorm[k][j] * xhat[k][j];
    }
  }
  const float inv_cols = 1.0f / static_cast<float>(a.cols);
  const float dnorm_mean = block_sum(dnorm_sum, reduce) * inv_cols;
  const float dnorm_xhat_mean = block_sum(dnorm_xhat_sum, reduce) * inv_cols;
#pragma unroll
  for (int k = 0; k < kQuads; ++k) {
    const int64_t q = threadIdx.x + int64_t{k} * blockDim.x;
    if (quad_width(q, a.cols) == 0) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) branch[k][j] = s * (dnorm[k][j] - dnorm_mean - xhat[k][j] * dnorm_xhat_mean);
    store_quad(a.d_sum + base, q, a.cols, a.vector, branch[k]);
    a.dropout.apply(base + 4 * q, branch[k]);
    store_quad(a.d_branch + base, q, a.cols, a.vector, branch[k]);
    if (a.d_branch_compute != nullptr)
      store_quad(a.d_branch_compute + base, q, a.cols, a.vector, branch[k]);  // rounded once
  }
}

/// input_grad_row over every row, the grid striding over rows.
template <int kQuads, typename SC>
__global__ void __launch_bounds__(kMaxThreads)
    layernorm_dropout_input_grad_kernel(InputGradRows<SC> a, int64_t rows) {
  __shared__ float reduce[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform: block_sum's syncs are safe
    float dy[kQuads][4], xhat[kQuads][4], branch[kQuads][4];
    input_grad_row<kQuads>(a, row, reduce, dy, xhat, branch);
  }
}

/// Consecutive rows a block of the fused backward sums before it writes its partial sums: at least
/// kMinRowsPerTile (the partials stay small beside the rows), at most kMaxRowTiles tiles.
struct RowTiles {
  static constexpr int64_t kMinRowsPerTile = 16;
  static constexpr int64_t kMaxRowTiles = 2048;
  int64_t rows_per_tile = kMinRowsPerTile;
  int64_t count = 0;

  static RowTiles make(int64_t rows) {
    RowTiles tiles;
    const int64_t spread = (rows + kMaxRowTiles - 1) / kMaxRowTiles;
    tiles.rows_per_tile = spread > kMinRowsPerTile ? spread : kMinRowsPerTile;
    tiles.count = (rows + tiles.rows_per_tile - 1) / tiles.rows_per_tile;
    return tiles;
  }
};

/// input_grad_row over RowTiles, also summing each tile's dγ (d_out·x̂), dβ (d_out) and dbias
/// (d_branch) terms per column, rows in order, into partial[k][tile][col] (k = 0, 1, 2).
template <int kQuads, typename SC>
__global__ void __launch_bounds__(256)
    layernorm_dropout_input_grad_sums_kernel(InputGradRows<SC> a, int64_t rows, RowTiles tiles, float* partial) {
  __shared__ float reduce[32];
  for (int64_t tile = blockIdx.x; tile < tiles.count; tile += gridDim.x) {  // uniform: syncs are safe
    float dgamma[kQuads][4], dbeta[kQuads][4], dbias[kQuads][4];
#pragma unroll
    for (int k = 0; k < kQuads; ++k)
#pragma unroll
      for (int j = 0; j < 4; ++j) dgamma[k][j] = dbeta[k][j] = dbias[k][j] = 0.0f;
    const int64_t begin = tile * tiles.rows_per_tile;
    const int64_t end = begin + tiles.rows_per_tile < rows ? begin + tiles.rows_per_tile : rows;
    for (int64_t row = begin; row < end; ++row) {
      float dy[kQuads][4], xhat[kQuads][4], branch[kQuads][4];
      input_grad_row<kQuads>(a, row, reduce, dy, xhat, branch);
#pragma unroll
      for (int k = 0; k < kQuads; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          dgamma[k][j] += dy[k][j] * xhat[k][j];
          dbeta[k][j] += dy[k][j];
          dbias[k][j] += branch[k][j];
        }
    }
#pragma unroll
    for (int k = 0; k < kQuads; ++k) {
      const int64_t q = threadIdx.x + int64_t{k} * blockDim.x;
      const int width = quad_width(q, a.cols);
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // unrolled with a guard: the sums stay in registers
        if (j >= width) continue;
        const int64_t col = 4 * q + j;
        partial[(0 * tiles.count + tile) * a.cols + col] = dgamma[k][j];
        partial[(1 * tiles.count + tile) * a.cols + col] = dbeta[k][j];
        partial[(2 * tiles.count + tile) * a.cols + col] = dbias[k][j];
      }
    }
  }
}

/// Threads per row block and quads per thread for rows of `cols` columns: the fewest quads per
/// thread that keep a block within 256 threads (512 at 8 quads), so a thread's registers hold its
/// part of a row.
struct RowLaunch {
  int quads_per_thread = 0;  // 0: the row does not fit (cols > kMaxColumns)
  int threads = 0;
};

RowLaunch row_launch(int64_t cols) {
  const int64_t quads = (cols + 3) / 4;
  for (int k = 1; k <= kMaxQuadsPerThread; k *= 2) {
    const int64_t threads = ((quads + k - 1) / k + 31) / 32 * 32;
    if (threads <= (k == kMaxQuadsPerThread ? kMaxThreads : 256)) return {k, static_cast<int>(threads)};
  }
  return {};
}

/// Blocks of `kernel` at `threads` one multiprocessor of the current device holds at once: asked of
/// the runtime once per device, kernel and block size (the query costs host time, and the kernels
/// run 2 × 24 times a step).
template <typename Kernel>
int blocks_per_multiprocessor(Kernel kernel, int threads, const char* op) {
  static std::mutex guard;
  static std::map<std::tuple<int, const void*, int>, int> known;
  int device = 0;
  cuda_check(cudaGetDevice(&device), op);
  const std::tuple<int, const void*, int> key{device, reinterpret_cast<const void*>(kernel), threads};
  const std::lock_guard<std::mutex> lock(guard);
  const auto found = known.find(key);
  if (found != known.end()) return found->second;
  int per_multiprocessor = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, threads, 0), op);
  return known[key] = std::max(per_multiprocessor, 1);
}

/// Blocks for `kernel` over `items` rows (or row tiles), each block striding over them: no more
/// than the device holds at once, and as few as give every block the same number of items but for
/// the last, so that the last round does not leave most of the device idle (2,048 tiles on 396
/// resident blocks: 342 blocks of 6 tiles, not 396 of 5 or 6). Rows and tiles are independent of
/// the grid, so the results are too.
template <typename Kernel>
unsigned row_blocks(Kernel kernel, int threads, int64_t items, int multiprocessors, const char* op) {
  const int64_t resident = int64_t{blocks_per_multiprocessor(kernel, threads, op)} * std::max(multiprocessors, 1);
  const int64_t per_block = (items + resident - 1) / resident;
  return static_cast<unsigned>(per_block > 0 ? (items + per_block - 1) / per_block : 1);
}

/// Calls body(std::integral_constant<int, k>{}) for k = quads_per_thread (1, 2, 4 or 8).
template <typename Body>
void with_quads_per_thread(int quads_per_thread, Body&& body) {
  switch (quads_per_thread) {
    case 1:
      return body(std::integral_constant<int, 1>{});
    case 2:
      return body(std::integral_constant<int, 2>{});
    case 4:
      return body(std::integral_constant<int, 4>{});
    default:
      return body(std::integral_constant<int, 8>{});
  }
}

/// The contract's checks, then this backend's own limit: a row must fit in a block's registers.
void check_row_fits(const ArgumentChecks& check, int64_t cols) {
  check.require(cols <= kMaxColumns, "rows of " + std::to_string(cols) +
                                         " columns: backend/cuda holds a row in registers, at most " +
                                         std::to_string(kMaxColumns) + " columns");
}

}  // namespace

void CudaBackend::residual_layernorm_forward(const loom::Tensor& y, const loom::Tensor& bias,
                                             const loom::Tensor& residual, float p, uint64_t seed,
                                             uint64_t offset, const loom::Tensor& gamma,
                                             const loom::Tensor& beta, float eps, const loom::Tensor& sum,
                                             const loom::Tensor& out, const loom::Tensor& out_compute,
                                             const loom::Tensor& mean, const loom::Tensor& rstd) {
  const char* op = "residual_layernorm_forward";
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        const loom_backend::LayerNormRows shape = loom_backend::check_residual_layernorm_forward(
            check, y, bias, residual, p, gamma, beta, eps, sum, out, out_compute, mean, rstd);
        check_row_fits(check, shape.cols);
        return shape;
      },
      [&](const loom_backend::LayerNormRows& shape) {
        const int64_t rows = shape.rows, cols = shape.cols;
        const RowLaunch launch = row_launch(cols);
        const float* b = bias.defined() ? static_cast<const float*>(bias.data) : nullptr;
        const bool vector = cols % 4 == 0 && is_aligned16(y.data) && is_aligned16(residual.data) &&
                            is_aligned16(sum.data) && is_aligned16(out.data) && is_aligned16(gamma.data) &&
                            is_aligned16(beta.data) && (b == nullptr || is_aligned16(b)) &&
                            (!out_compute.defined() || is_aligned8(out_compute.data));
        const auto run = [&](auto compute_type) {
          using SC = decltype(compute_type);
          with_quads_per_thread(launch.quads_per_thread, [&](auto quads) {
            const auto kernel = bias_dropout_residual_layernorm_kernel<decltype(quads)::value, SC>;
            const unsigned blocks = row_blocks(kernel, launch.threads, rows, info_.multiprocessors, op);
            kernel<<<blocks, launch.threads, 0, stream_>>>(
                static_cast<const float*>(y.data), b, static_cast<const float*>(residual.data),
                RowDropout::make(p, seed, offset), static_cast<const float*>(gamma.data),
                static_cast<const float*>(beta.data), eps, static_cast<float*>(sum.data),
                static_cast<float*>(out.data),
                out_compute.defined() ? static_cast<SC*>(out_compute.data) : nullptr,
                static_cast<float*>(mean.data), static_cast<float*>(rstd.data), rows, cols, vector);
          });
        };
        // The copy's type is the op's own dispatch rather than a float view's storage: without
        // out_compute the bf16 instantiation runs with a null pointer (the store is skipped), so
        // no kernel is compiled for an f32 copy that cannot exist.
        if (out_compute.defined() && out_compute.dtype == DType::f16)
          run(loom::Half{});
        else
          run(loom::BFloat16{});
      });
}

void CudaBackend::residual_layernorm_backward(const loom::Tensor& d_out, const loom::Tensor& sum,
                                              const loom::Tensor& gamma, const loom::Tensor& mean,
                                              const loom::Tensor& rstd, float p, uint64_t seed,
                                              uint64_t offset, const loom::Tensor& d_sum,
                                              const loom::Tensor& d_branch, const loom::Tensor& dgamma,
                                              const loom::Tensor& dbeta, const loom::Tensor& dbias) {
  const char* op = "residual_layernorm_backward";
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        const loom_backend::LayerNormRows shape = loom_backend::check_residual_layernorm_backward(
            check, d_out, sum, gamma, mean, rstd, p, d_sum, d_branch, dgamma, dbeta, dbias);
        check_row_fits(check, shape.cols);
        return shape;
      },
      [&](const loom_backend::LayerNormRows& shape) {
        enqueue_residual_layernorm_backward(op, shape, d_out, sum, gamma, mean, rstd, p, seed, offset, d_sum,
                                            d_branch, {}, dgamma, dbeta, dbias);
      });
}

void CudaBackend::residual_layernorm_backward_copy(const loom::Tensor& d_out, const loom::Tensor& sum,
                                                   const loom::Tensor& gamma, const loom::Tensor& mean,
                                                   const loom::Tensor& rstd, float p, uint64_t seed,
                                                   uint64_t offset, const loom::Tensor& d_sum,
                                                   const loom::Tensor& d_branch,
                                                   const loom::Tensor& d_branch_compute, const loom::Tensor& dgamma,
                                                   const loom::Tensor& dbeta, const loom::Tensor& dbias) {
  const char* op = "residual_layernorm_backward_copy";
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        const loom_backend::LayerNormRows shape = loom_backend::check_residual_layernorm_backward_copy(
            check, d_out, sum, gamma, mean, rstd, p, d_sum, d_branch, d_branch_compute, dgamma, dbeta, dbias);
        check_row_fits(check, shape.cols);
        return shape;
      },
      [&](const loom_backend::LayerNormRows& shape) {
        enqueue_residual_layernorm_backward(op, shape, d_out, sum, gamma, mean, rstd, p, seed, offset, d_sum,
                                            d_branch, d_branch_compute, dgamma, dbeta, dbias);
      });
}

void CudaBackend::enqueue_residual_layernorm_backward(
    const char* op, const loom_backend::LayerNormRows& shape, const loom::Tensor& d_out, const loom::Tensor& sum,
    const loom::Tensor& gamma, const loom::Tensor& mean, const loom::Tensor& rstd, float p, uint64_t seed,
    uint64_t offset, const loom::Tensor& d_sum, const loom::Tensor& d_branch, const loom::Tensor& d_branch_compute,
    const loom::Tensor& dgamma, const loom::Tensor& dbeta, const loom::Tensor& dbias) {
  const int64_t rows = shape.rows, cols = shape.cols;
  const RowLaunch launch = row_launch(cols);
  const auto* dys = static_cast<const float*>(d_out.data);
  const auto* sums = static_cast<const float*>(sum.data);
  const auto* means = static_cast<const float*>(mean.data);
  const auto* rstds = static_cast<const float*>(rstd.data);
  auto* branch = static_cast<float*>(d_branch.data);
  const bool vector = cols % 4 == 0 && is_aligned16(d_out.data) && is_aligned16(sum.data) &&
                      is_aligned16(gamma.data) && is_aligned16(d_sum.data) && is_aligned16(d_branch.data) &&
                      (!d_branch_compute.defined() || is_aligned8(d_branch_compute.data));
  // The rows' arguments for a copy of the storage type of `compute_type`.
  const auto rows_of = [&](auto compute_type) {
    using SC = decltype(compute_type);
    return InputGradRows<SC>{dys, sums, static_cast<const float*>(gamma.data), means, rstds,
                             RowDropout::make(p, seed, offset), static_cast<float*>(d_sum.data), branch,
                             d_branch_compute.defined() ? static_cast<SC*>(d_branch_compute.data) : nullptr,
                             cols, vector};
  };
  // As in the forward: the copy's type is the op's own dispatch; without a copy the bf16
  // instantiation runs with a null pointer.
  const auto with_copy_type = [&](auto run) {
    if (d_branch_compute.defined() && d_branch_compute.dtype == DType::f16)
      run(loom::Half{});
    else
      run(loom::BFloat16{});
  };
  if (launch.quads_per_thread <= 4) {
    // One kernel: the rows' gradients and every column sum's tile partials, then the tiles added.
    const RowTiles tiles = RowTiles::make(rows);
    const int64_t per_sum = tiles.count * cols;
    float* partial = static_cast<float*>(scratch(static_cast<size_t>(3 * per_sum) * sizeof(float)));
    with_copy_type([&](auto compute_type) {
      using SC = decltype(compute_type);
      with_quads_per_thread(launch.quads_per_thread, [&](auto quads) {
        if constexpr (decltype(quads)::value <= 4) {
          const auto kernel = layernorm_dropout_input_grad_sums_kernel<decltype(quads)::value, SC>;
          const unsigned blocks = row_blocks(kernel, launch.threads, tiles.count, info_.multiprocessors, op);
          kernel<<<blocks, launch.threads, 0, stream_>>>(rows_of(compute_type), rows, tiles, partial);
        }
      });
    });
    const FinalizeOutputs out{{static_cast<float*>(dgamma.data), static_cast<float*>(dbeta.data),
                               dbias.defined() ? static_cast<float*>(dbias.data) : nullptr}};
    finalize_column_sums(partial, tiles.count, cols, out, dbias.defined() ? 3 : 2, stream_);
    return;
  }
  // One scratch area serves both column sums: they run one after the other on the stream.
  const ColumnSumPlan plan = ColumnSumPlan::make(rows, cols, 1);
  float* partial = static_cast<float*>(scratch(plan.scratch_floats(2) * sizeof(float)));
  accumulate_layernorm_parameter_grads(dys, sums, means, rstds, rows, cols, partial,
                                       static_cast<float*>(dgamma.data), static_cast<float*>(dbeta.data),
                                       stream_);
  with_copy_type([&](auto compute_type) {
    using SC = decltype(compute_type);
    with_quads_per_thread(launch.quads_per_thread, [&](auto quads) {
      const auto kernel = layernorm_dropout_input_grad_kernel<decltype(quads)::value, SC>;
      const unsigned blocks = row_blocks(kernel, launch.threads, rows, info_.multiprocessors, op);
      kernel<<<blocks, launch.threads, 0, stream_>>>(rows_of(compute_type), rows);
    });
  });
  if (dbias.defined()) {
    float* const out[1] = {static_cast<float*>(dbias.data)};
    accumulate_column_sums<1>(DenseColumnTerm{branch, cols}, plan, partial, out, stream_);
  }
}

}  // namespace loom_cuda
