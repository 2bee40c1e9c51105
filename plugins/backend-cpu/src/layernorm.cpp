// LayerNorm forward (saving mean and rstd) and backward (dx, and dγ/dβ accumulated).
//
// Forward and dx are parallel over rows; dγ/dβ are parallel over blocks of columns with rows
// summed in order, so no result depends on the thread count. Backward reduces dγ/dβ before
// writing dx, which is what lets dx alias dy.
#include <cmath>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/op_contracts.hpp"

namespace loom_cpu {
namespace {

template <typename SX, typename SY>
void layernorm_rows(const SX* x, const float* gamma, const float* beta, float eps, SY* y, float* mean,
                    float* rstd, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const SX* xr = x + r * cols;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < cols; ++c) sum += load(xr, c);
    const float m = sum / static_cast<float>(cols);
    float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
    for (int64_t c = 0; c < cols; ++c) {
      const float d = load(xr, c) - m;
      squares += d * d;
    }
    const float s = 1.0f / std::sqrt(squares / static_cast<float>(cols) + eps);
    SY* yr = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) store(yr, c, (load(xr, c) - m) * s * gamma[c] + beta[c]);
    mean[r] = m;
    rstd[r] = s;
  }
}

template <typename SX>
void layernorm_parameter_grads(const float* dy, const SX* x, const float* mean, const float* rstd,
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

template <typename SX>
void layernorm_input_grad(const float* dy, const SX* x, const float* gamma, const float* mean,
                          const float* rstd, float* dx, bool accumulate, int64_t rows, int64_t cols,
                          int threads) {
  const float inv_cols = 1.0f / static_cast<float>(cols);
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * cols;
    const SX* xr = x + r * cols;
    float* dxr = dx + r * cols;
    const float m = mean[r], s = rstd[r];
    float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_xhat_mean)
    for (int64_t c = 0; c < cols; ++c) {
      const float dnorm = dyr[c] * gamma[c];
      dnorm_mean += dnorm;
      dnorm_xhat_mean += dnorm * (load(xr, c) - m) * s;
    }
    dnorm_mean *= inv_cols;
    dnorm_xhat_mean *= inv_cols;
    if (accumulate) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c)
        dxr[c] += s * (dyr[c] * gamma[c] - dnorm_mean - (load(xr, c) - m) * s * dnorm_xhat_mean);
    } else {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c)
        dxr[c] = s * (dyr[c] * gamma[c] - dnorm_mean - (load(xr, c) - m) * s * dnorm_xhat_mean);
    }
  }
}

}  // namespace

void CpuBackend::layernorm_forward(const loom::Tensor& x, const loom::Tensor& gamma, const loom::Tensor& beta,
                                   float eps, const loom::Tensor& y, const loom::Tensor& mean,
                                   const loom::Tensor& rstd) {
  const auto check = checks("layernorm_forward");
  const loom_backend::LayerNormRows shape =
      loom_backend::check_layernorm_forward(check, x, gamma, beta, eps, y, mean, rstd);
  const int64_t rows = shape.rows, cols = shape.cols;
  with_float_storage(x.dtype, "layernorm_forward", [&](auto xt) {
    with_float_storage(y.dtype, "layernorm_forward", [&](auto yt) {
      using SX = decltype(xt);
      using SY = decltype(yt);
      layernorm_rows(static_cast<const SX*>(x.data), static_cast<const float*>(gamma.data),
                     static_cast<const float*>(beta.data), eps, static_cast<SY*>(y.data),
                     static_cast<float*>(mean.data), static_cast<float*>(rstd.data), rows, cols, threads_);
    });
  });
}

void CpuBackend::layernorm_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& gamma,
                                    const loom::Tensor& mean, const loom::Tensor& rstd,
                                    const loom::Tensor& dx, const loom::Tensor& dgamma,
                                    const loom::Tensor& dbeta, bool accumulate_dx) {
  const auto check = checks("layernorm_backward");
  const loom_backend::LayerNormRows shape = loom_backend::check_layernorm_backward(
      check, dy, x, gamma, mean, rstd, dx, dgamma, dbeta, accumulate_dx);
  const int64_t rows = shape.rows, cols = shape.cols;
  with_float_storage(x.dtype, "layernorm_backward", [&](auto xt) {
    using SX = decltype(xt);
    const auto* xs = static_cast<const SX*>(x.data);
    const auto* dys = static_cast<const float*>(dy.data);
    layernorm_parameter_grads(dys, xs, static_cast<const float*>(mean.data),
                              static_cast<const float*>(rstd.data), static_cast<float*>(dgamma.data),
                              static_cast<float*>(dbeta.data), rows, cols, threads_);
    layernorm_input_grad(dys, xs, static_cast<const float*>(gamma.data), static_cast<const float*>(mean.data),
                         static_cast<const float*>(rstd.data), static_cast<float*>(dx.data), accumulate_dx,
                         rows, cols, threads_);
  });
}

}  // namespace loom_cpu
