// bias_add, bias_grad, add (residual) and axpby: the memory-bound glue between GEMMs.
#include "argument_checks.hpp"
#include "column_sums.hpp"
#include "cpu_backend.hpp"
#include "float_storage.hpp"

namespace loom_cpu {
namespace {

/// P of a bias view [C] (1) or [P, C], checked against x's columns and rows.
int64_t bias_period(const ArgumentChecks& check, const char* name, const loom::Tensor& bias, int64_t rows,
                    int64_t cols) {
  check.require(bias.ndim == 1 || bias.ndim == 2,
                std::string(name) + " " + bias.describe() + " must be [C] or [P, C]");
  check.require(bias.shape[bias.ndim - 1] == cols, std::string(name) + " " + bias.describe() + " must have " +
                                                       std::to_string(cols) + " columns");
  const int64_t period = bias.ndim == 1 ? 1 : bias.shape[0];
  check.require(period > 0 && rows % period == 0, std::string(name) + " " + bias.describe() + ": " +
                                                      std::to_string(rows) + " rows are not a multiple of " +
                                                      std::to_string(period));
  return period;
}

}  // namespace

void CpuBackend::bias_add(const loom::Tensor& x, const loom::Tensor& bias) {
  const ArgumentChecks check("bias_add");
  check.tensor("x", x, {DType::f32});
  check.tensor("bias", bias, {DType::f32});
  const int64_t cols = check.columns("x", x);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const int64_t period = bias_period(check, "bias", bias, rows, cols);
  float* xs = static_cast<float*>(x.data);
  const float* b = static_cast<const float*>(bias.data);
#pragma omp parallel for num_threads(threads_) schedule(static) if (rows * cols > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    float* row = xs + r * cols;
    const float* br = b + (r % period) * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) row[c] += br[c];
  }
}

void CpuBackend::bias_grad(const loom::Tensor& dy, const loom::Tensor& dbias) {
  const ArgumentChecks check("bias_grad");
  check.tensor("dy", dy, {DType::f32});
  check.tensor("dbias", dbias, {DType::f32});
  const int64_t cols = check.columns("dy", dy);
  const int64_t rows = cols == 0 ? 0 : dy.numel() / cols;
  const int64_t period = bias_period(check, "dbias", dbias, rows, cols);
  accumulate_column_sums(static_cast<const float*>(dy.data), rows, cols, period,
                         static_cast<float*>(dbias.data), threads_);
}

void CpuBackend::add(const loom::Tensor& a, const loom::Tensor& b, const loom::Tensor& out) {
  const ArgumentChecks check("add");
  check.tensor("a", a, {DType::f32, DType::bf16, DType::f16});
  check.tensor("b", b, {DType::f32, DType::bf16, DType::f16});
  check.tensor("out", out, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("a", a, "out", out);
  check.same_shape("b", b, "out", out);
  const int64_t n = out.numel();
  with_float_storage(a.dtype, "add", [&](auto at) {
    with_float_storage(b.dtype, "add", [&](auto bt) {
      with_float_storage(out.dtype, "add", [&](auto ot) {
        using A = decltype(at);
        using B = decltype(bt);
        using O = decltype(ot);
        const A* as = static_cast<const A*>(a.data);
        const B* bs = static_cast<const B*>(b.data);
        O* os = static_cast<O*>(out.data);
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; ++i) store(os, i, load(as, i) + load(bs, i));
      });
    });
  });
}

void CpuBackend::axpby(float alpha, const loom::Tensor& x, float beta, const loom::Tensor& y) {
  const ArgumentChecks check("axpby");
  check.tensor("x", x, {DType::f32});
  check.tensor("y", y, {DType::f32});
  check.same_shape("x", x, "y", y);
  const float* xs = static_cast<const float*>(x.data);
  float* ys = static_cast<float*>(y.data);
  const int64_t n = y.numel();
  if (beta == 0.0f) {
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) ys[i] = alpha * xs[i];
  } else {
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) ys[i] = alpha * xs[i] + beta * ys[i];
  }
}

}  // namespace loom_cpu
