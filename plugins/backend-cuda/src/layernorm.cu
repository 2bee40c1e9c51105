// LayerNorm forward (saving mean and rstd) and backward (dx, and dγ/dβ accumulated).
//
// Forward and dx: one warp per row, two passes over the row in f32 (mean, then the biased
// variance of x − mean: no catastrophic cancellation), lane sums combined by a fixed butterfly.
// dγ/dβ are deterministic column sums of dy·x̂ and dy (layernorm_parameter_grads.cuh), enqueued
// BEFORE the dx kernel so dx may alias dy.
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "layernorm_parameter_grads.cuh"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

template <typename SX, typename SY>
__global__ void layernorm_forward_kernel(const SX* x, const float* gamma, const float* beta, float eps, SY* y,
                                         float* mean, float* rstd, int64_t rows, int64_t cols) {
  const int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps leave together: the shuffles below see full warps
  const SX* xr = x + row * cols;
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) sum += load(xr, c);
  const float m = warp_sum(sum) / static_cast<float>(cols);
  float squares = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const float d = load(xr, c) - m;
    squares += d * d;
  }
  const float s = rsqrtf(warp_sum(squares) / static_cast<float>(cols) + eps);
  SY* yr = y + row * cols;
  // y may alias x: each lane reads and writes only its own columns, every read of the row above
  // happened in this lane before its first write.
  for (int64_t c = lane; c < cols; c += 32) store(yr, c, (load(xr, c) - m) * s * gamma[c] + beta[c]);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <typename SX>
__global__ void layernorm_input_grad_kernel(const float* dy, const SX* x, const float* gamma,
                                            const float* mean, const float* rstd, float* dx, bool accumulate,
                                            int64_t rows, int64_t cols) {
  const int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* dyr = dy + row * cols;
  const SX* xr = x + row * cols;
  float* dxr = dx + row * cols;
  const float m = mean[row], s = rstd[row];
  float dnorm_sum = 0.0f, dnorm_xhat_sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const float dnorm = dyr[c] * gamma[c];
    dnorm_sum += dnorm;
    dnorm_xhat_sum += dnorm * (load(xr, c) - m) * s;
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const float dnorm_mean = warp_sum(dnorm_sum) * inv_cols;
  const float dnorm_xhat_mean = warp_sum(dnorm_xhat_sum) * inv_cols;
  for (int64_t c = lane; c < cols; c += 32) {
    const float g = s * (dyr[c] * gamma[c] - dnorm_mean - (load(xr, c) - m) * s * dnorm_xhat_mean);
    dxr[c] = accumulate ? dxr[c] + g : g;
  }
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void CudaBackend::layernorm_forward(const loom::Tensor& x, const loom::Tensor& gamma,
                                    const loom::Tensor& beta, float eps, const loom::Tensor& y,
                                    const loom::Tensor& mean, const loom::Tensor& rstd) {
  run_op(
      "layernorm_forward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_layernorm_forward(check, x, gamma, beta, eps, y, mean, rstd);
      },
      {x.dtype, y.dtype},
      [&](const loom_backend::LayerNormRows& shape, auto xt, auto yt) {
        using SX = decltype(xt);
        using SY = decltype(yt);
        layernorm_forward_kernel<SX, SY><<<row_blocks(shape.rows), 32 * kWarpsPerBlock, 0, stream_>>>(
            static_cast<const SX*>(x.data), static_cast<const float*>(gamma.data),
            static_cast<const float*>(beta.data), eps, static_cast<SY*>(y.data),
            static_cast<float*>(mean.data), static_cast<float*>(rstd.data), shape.rows, shape.cols);
      });
}

void CudaBackend::layernorm_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& gamma,
                                     const loom::Tensor& mean, const loom::Tensor& rstd,
                                     const loom::Tensor& dx, const loom::Tensor& dgamma,
                                     const loom::Tensor& dbeta, bool accumulate_dx) {
  run_op(
      "layernorm_backward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_layernorm_backward(check, dy, x, gamma, mean, rstd, dx, dgamma, dbeta,
                                                      accumulate_dx);
      },
      {x.dtype},
      [&](const loom_backend::LayerNormRows& shape, auto xt) {
        using SX = decltype(xt);
        const int64_t rows = shape.rows, cols = shape.cols;
        float* partial = static_cast<float*>(
            scratch(ColumnSumPlan::make(rows, cols, 1).scratch_floats(2) * sizeof(float)));
        const auto* xs = static_cast<const SX*>(x.data);
        const auto* dys = static_cast<const float*>(dy.data);
        const auto* means = static_cast<const float*>(mean.data);
        const auto* rstds = static_cast<const float*>(rstd.data);
        accumulate_layernorm_parameter_grads(dys, xs, means, rstds, rows, cols, partial,
                                             static_cast<float*>(dgamma.data),
                                             static_cast<float*>(dbeta.data), stream_);
        layernorm_input_grad_kernel<SX><<<row_blocks(rows), 32 * kWarpsPerBlock, 0, stream_>>>(
            dys, xs, static_cast<const float*>(gamma.data), means, rstds, static_cast<float*>(dx.data),
            accumulate_dx, rows, cols);
      });
}

}  // namespace loom_cuda
