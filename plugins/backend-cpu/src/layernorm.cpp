// LayerNorm forward (saving mean and rstd) and backward (dx, and dγ/dβ accumulated).
//
// Forward and dx are parallel over rows, the arithmetic of a row in layernorm_rows.hpp; dγ/dβ are
// parallel over blocks of columns with rows summed in order, so no result depends on the thread
// count. Backward reduces dγ/dβ before writing dx, which is what lets dx alias dy.
#include "cpu_backend.hpp"
#include "layernorm_rows.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {
namespace {

template <typename SX, typename SY>
void layernorm_rows(const SX* x, const float* gamma, const float* beta, float eps, SY* y, float* mean,
                    float* rstd, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r)
    layernorm_row(x + r * cols, gamma, beta, eps, y + r * cols, cols, mean[r], rstd[r]);
}

template <typename SX>
void layernorm_input_grad(const float* dy, const SX* x, const float* gamma, const float* mean,
                          const float* rstd, float* dx, bool accumulate, int64_t rows, int64_t cols,
                          int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r)
    layernorm_input_grad_row(dy + r * cols, x + r * cols, gamma, mean[r], rstd[r], dx + r * cols, accumulate,
                             cols);
}

}  // namespace

void CpuBackend::layernorm_forward(const loom::Tensor& x, const loom::Tensor& gamma, const loom::Tensor& beta,
                                   float eps, const loom::Tensor& y, const loom::Tensor& mean,
                                   const loom::Tensor& rstd) {
  run_op(
      "layernorm_forward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_layernorm_forward(check, x, gamma, beta, eps, y, mean, rstd);
      },
      {x.dtype, y.dtype},
      [&](const loom_backend::LayerNormRows& shape, auto xt, auto yt) {
        using SX = decltype(xt);
        using SY = decltype(yt);
        layernorm_rows(static_cast<const SX*>(x.data), static_cast<const float*>(gamma.data),
                       static_cast<const float*>(beta.data), eps, static_cast<SY*>(y.data),
                       static_cast<float*>(mean.data), static_cast<float*>(rstd.data), shape.rows, shape.cols,
                       threads_);
      });
}

void CpuBackend::layernorm_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& gamma,
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
        const auto* xs = static_cast<const SX*>(x.data);
        const auto* dys = static_cast<const float*>(dy.data);
        layernorm_parameter_grads(dys, xs, static_cast<const float*>(mean.data),
                                  static_cast<const float*>(rstd.data), static_cast<float*>(dgamma.data),
                                  static_cast<float*>(dbeta.data), rows, cols, threads_);
        layernorm_input_grad(dys, xs, static_cast<const float*>(gamma.data),
                             static_cast<const float*>(mean.data), static_cast<const float*>(rstd.data),
                             static_cast<float*>(dx.data), accumulate_dx, rows, cols, threads_);
      });
}

}  // namespace loom_cpu
