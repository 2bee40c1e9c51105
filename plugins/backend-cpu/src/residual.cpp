// bias_add, bias_grad, add (residual) and axpby: the memory-bound glue between GEMMs.
#include "column_sums.hpp"
#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {

void CpuBackend::bias_add(const loom::Tensor& x, const loom::Tensor& bias) {
  run_op(
      "bias_add",
      [&](const ArgumentChecks& check) { return loom_backend::check_bias_rows(check, "x", x, "bias", bias); },
      [&](const loom_backend::BiasRows& shape) {
        const int64_t rows = shape.rows, cols = shape.cols, period = shape.period;
        float* xs = static_cast<float*>(x.data);
        const float* b = static_cast<const float*>(bias.data);
#pragma omp parallel for num_threads(threads_) schedule(static) if (rows * cols > 32768)
        for (int64_t r = 0; r < rows; ++r) {
          float* row = xs + r * cols;
          const float* br = b + (r % period) * cols;
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c) row[c] += br[c];
        }
      });
}

void CpuBackend::bias_grad(const loom::Tensor& dy, const loom::Tensor& dbias) {
  run_op(
      "bias_grad",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_bias_rows(check, "dy", dy, "dbias", dbias);
      },
      [&](const loom_backend::BiasRows& shape) {
        accumulate_column_sums(static_cast<const float*>(dy.data), shape.rows, shape.cols, shape.period,
                               static_cast<float*>(dbias.data), threads_);
      });
}

// BiasGradCopy: bias_grad, then cast, so both paths give the same bits (the named interface saves a
// GPU a pass; here it only keeps the blocks on one path).
void CpuBackend::bias_grad_copy(const loom::Tensor& dy, const loom::Tensor& dbias, const loom::Tensor& dy_compute) {
  run_op(
      "bias_grad_copy",
      [&](const ArgumentChecks& check) { return loom_backend::check_bias_grad_copy(check, dy, dbias, dy_compute); },
      [&](const loom_backend::BiasRows&) {
        bias_grad(dy, dbias);
        cast(dy, dy_compute);
      });
}

void CpuBackend::add(const loom::Tensor& a, const loom::Tensor& b, const loom::Tensor& out) {
  run_op(
      "add",
      [&](const ArgumentChecks& check) {
        loom_backend::check_add(check, a, b, out);
        return out.numel();
      },
      {a.dtype, b.dtype, out.dtype},
      [&](int64_t n, auto at, auto bt, auto ot) {
        using A = decltype(at);
        using B = decltype(bt);
        using O = decltype(ot);
        const A* as = static_cast<const A*>(a.data);
        const B* bs = static_cast<const B*>(b.data);
        O* os = static_cast<O*>(out.data);
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; ++i) store(os, i, load(as, i) + load(bs, i));
      });
}

void CpuBackend::axpby(float alpha, const loom::Tensor& x, float beta, const loom::Tensor& y) {
  run_op(
      "axpby",
      [&](const ArgumentChecks& check) {
        loom_backend::check_axpby(check, x, y);
        return y.numel();
      },
      [&](int64_t n) {
        const float* xs = static_cast<const float*>(x.data);
        float* ys = static_cast<float*>(y.data);
        if (beta == 0.0f) {
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
          for (int64_t i = 0; i < n; ++i) ys[i] = alpha * xs[i];
        } else {
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
          for (int64_t i = 0; i < n; ++i) ys[i] = alpha * xs[i] + beta * ys[i];
        }
      });
}

}  // namespace loom_cpu
