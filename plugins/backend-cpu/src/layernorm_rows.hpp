// LayerNorm one row at a time, and its parameter gradients: the arithmetic layernorm.cpp and
// residual_layernorm.cpp share, so that the fused op and the separate ops agree bit for bit.
//
// A row: mean, then the variance of (x − mean), rstd = 1/√(var + eps), y = (x − mean)·rstd·γ + β.
// dγ/dβ are summed over rows in order within blocks of columns, so no result depends on the
// thread count.
#pragma once

#include <cmath>
#include <cstdint>

#include "cpu_backend.hpp"
#include "float_storage.hpp"

namespace loom_cpu {

/// y = LayerNorm(x) over one row of `cols`; returns its mean and rstd.
template <typename SX, typename SY>
inline void layernorm_row(const SX* x, const float* gamma, const float* beta, float eps, SY* y, int64_t cols,
                          float& mean, float& rstd) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) sum += load(x, c);
  const float m = sum / static_cast<float>(cols);
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t c = 0; c < cols; ++c) {
    const float d = load(x, c) - m;
    squares += d * d;
  }
  const float s = 1.0f / std::sqrt(squares / static_cast<float>(cols) + eps);
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) store(y, c, (load(x, c) - m) * s * gamma[c] + beta[c]);
  mean = m;
  rstd = s;
}

/// dx = ∂/∂x of one row (OVERWRITE, or ACCUMULATE when `accumulate`); dx may alias dy.
template <typename SX>
inline void layernorm_input_grad_row(const float* dy, const SX* x, const float* gamma, float mean, float rstd,
                                     float* dx, bool accumulate, int64_t cols) {
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const float m = mean, s = rstd;
  float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_xhat_mean)
  for (int64_t c = 0; c < cols; ++c) {
    const float dnorm = dy[c] * gamma[c];
    dnorm_mean += dnorm;
    dnorm_xhat_mean += dnorm * (load(x, c) - m) * s;
  }
  dnorm_mean *= inv_cols;
  dnorm_xhat_mean *= inv_cols;
  if (accumulate) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      dx[c] += s * (dy[c] * gamma[c] - dnorm_mean - (load(x, c) - m) * s * dnorm_xhat_mean);
  } else {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      dx[c] = s * (dy[c] * gamma[c] - dnorm_mean - (load(x, c) - m) * s * dnorm_xhat_mean);
  }
}

/// dγ += Σ_rows dy·x̂, dβ += Σ_rows dy, parallel over blocks of columns.
template <typename SX>
inline void layernorm_parameter_grads(const float* dy, const SX* x, const float* mean, const float* rstd,
                                      float* dgamma, float* dbeta, int64_t rows, int64_t cols, int threads) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t begin = block * kBlock;
    const int64_t width = cols - begin < kBlock ? cols - begin : kBlock;
    float g[kBlock] = {}, b[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* dyr = dy + r * cols + begin;
      const SX* xr = x + r * cols + begin;
      const float m = mean[r], s = rstd[r];
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) {
        g[c] += dyr[c] * (load(xr, c) - m) * s;
        b[c] += dyr[c];
      }
    }
    for (int64_t c = 0; c < width; ++c) {
      dgamma[begin + c] += g[c];
      dbeta[begin + c] += b[c];
    }
  }
}

}  // namespace loom_cpu
