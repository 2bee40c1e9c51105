// Fused bias + GELU (erf and tanh forms, gelu_forms.hpp) and tanh, forward and backward.
//
// GELU backward recomputes the pre-activation x + bias instead of storing it; the bias gradient
// is the column sum of dx, reduced per column in row order (independent of the thread count).
#include <cmath>

#include "column_sums.hpp"
#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "gelu_forms.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"
#include "vector_math.hpp"

namespace loom_cpu {
namespace {

/// x of bias_gelu_* as rows of the bias' columns (the columns its contract returns).
struct GeluRows {
  int64_t rows, cols;
};
GeluRows gelu_rows_of(const loom::Tensor& x, int64_t cols) {
  return {cols == 0 ? 0 : x.numel() / cols, cols};
}

/// y = gelu(x + bias) in GELU form `Form` (gelu_forms.hpp).
template <typename Form, typename S, typename SY>
void gelu_rows(const S* x, const float* bias, SY* y, int64_t rows, int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const S* xr = x + r * cols;
    SY* yr = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float v = load(xr, c) + (bias != nullptr ? bias[c] : 0.0f);
      store(yr, c, Form::value(v));
    }
  }
}

/// dx = dy·gelu'(x + bias) in GELU form `Form`.
template <typename Form, typename S>
void gelu_backward_rows(const float* dy, const S* x, const float* bias, float* dx, int64_t rows, int64_t cols,
                        int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const S* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float v = load(xr, c) + (bias != nullptr ? bias[c] : 0.0f);
      dxr[c] = dyr[c] * Form::derivative(v);
    }
  }
}

}  // namespace

void CpuBackend::bias_gelu_forward(const loom::Tensor& x, const loom::Tensor& bias, const loom::Tensor& y,
                                   loom::Gelu variant) {
  run_op(
      "bias_gelu_forward",
      [&](const ArgumentChecks& check) {
        return gelu_rows_of(x, loom_backend::check_bias_gelu_forward(check, x, bias, y));
      },
      {x.dtype, y.dtype},
      [&](const GeluRows& shape, auto xs, auto ys) {
        using SX = decltype(xs);
        using SY = decltype(ys);
        const float* b = bias.defined() ? static_cast<const float*>(bias.data) : nullptr;
        with_gelu_form(variant, [&](auto form) {
          gelu_rows<decltype(form)>(static_cast<const SX*>(x.data), b, static_cast<SY*>(y.data), shape.rows,
                                    shape.cols, threads_);
        });
      });
}

void CpuBackend::bias_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                                    const loom::Tensor& dx, const loom::Tensor& dbias, loom::Gelu variant) {
  run_op(
      "bias_gelu_backward",
      [&](const ArgumentChecks& check) {
        return gelu_rows_of(x, loom_backend::check_bias_gelu_backward(check, dy, x, bias, dx, dbias));
      },
      {x.dtype},
      [&](const GeluRows& shape, auto xs) {
        using SX = decltype(xs);
        const float* b = bias.defined() ? static_cast<const float*>(bias.data) : nullptr;
        with_gelu_form(variant, [&](auto form) {
          gelu_backward_rows<decltype(form)>(static_cast<const float*>(dy.data),
                                             static_cast<const SX*>(x.data), b, static_cast<float*>(dx.data),
                                             shape.rows, shape.cols, threads_);
        });
        if (dbias.defined())
          accumulate_column_sums(static_cast<const float*>(dx.data), shape.rows, shape.cols, 1,
                                 static_cast<float*>(dbias.data), threads_);
      });
}

// BiasGeluBackwardCopy: the separate ops, bias_gelu_backward then cast, so both paths give the
// same bits (the named interface saves a GPU a pass; here it only keeps the blocks on one path).
// Without dx the f32 result is computed in dy's place, as the interface allows.
void CpuBackend::bias_gelu_backward_copy(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                                         const loom::Tensor& dx, const loom::Tensor& dx_compute,
                                         const loom::Tensor& dbias, loom::Gelu variant) {
  run_op(
      "bias_gelu_backward_copy",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_bias_gelu_backward_copy(check, dy, x, bias, dx, dx_compute, dbias);
      },
      [&](int64_t /*cols*/) {
        const loom::Tensor& result = dx.defined() ? dx : dy;
        bias_gelu_backward(dy, x, bias, result, dbias, variant);
        cast(result, dx_compute);
      });
}

void CpuBackend::tanh_forward(const loom::Tensor& x, const loom::Tensor& y) {
  run_op(
      "tanh_forward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_tanh_forward(check, x, y);
        return x.numel();
      },
      [&](int64_t n) {
        const float* xs = static_cast<const float*>(x.data);
        float* ys = static_cast<float*>(y.data);
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; ++i) ys[i] = tanhf(xs[i]);
      });
}

void CpuBackend::tanh_backward(const loom::Tensor& dy, const loom::Tensor& y, const loom::Tensor& dx) {
  run_op(
      "tanh_backward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_tanh_backward(check, dy, y, dx);
        return y.numel();
      },
      [&](int64_t n) {
        const float* g = static_cast<const float*>(dy.data);
        const float* ys = static_cast<const float*>(y.data);
        float* d = static_cast<float*>(dx.data);
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; ++i) d[i] = g[i] * (1.0f - ys[i] * ys[i]);
      });
}

}  // namespace loom_cpu
