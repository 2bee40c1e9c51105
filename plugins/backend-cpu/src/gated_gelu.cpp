// The gated GELU of a GeGLU feed-forward layer (loom/sdk/ops/geglu.hpp): y = gelu(a)·g for the
// halves a, g of each row of x, and its gradients, with bias + GELU's forms (gelu_forms.hpp).
//
// Rows run in parallel and every output element is its own short f32 expression, rounded once
// into y's storage: results do not depend on the thread count. Backward recomputes gelu(a) and
// gelu'(a) from the saved x, as bias + GELU's backward does.
#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "gelu_forms.hpp"
#include "loom_backend/gated_gelu_contract.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {
namespace {

template <typename Form, typename S, typename SY>
void gated_rows(const S* x, SY* y, int64_t rows, int64_t width, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * width > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const S* a = x + 2 * r * width;
    const S* g = a + width;
    SY* yr = y + r * width;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) store(yr, c, Form::value(load(a, c)) * load(g, c));
  }
}

template <typename Form, typename S>
void gated_backward_rows(const float* dy, const S* x, float* dx, int64_t rows, int64_t width, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * width > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const S* a = x + 2 * r * width;
    const S* g = a + width;
    const float* dyr = dy + r * width;
    float* da = dx + 2 * r * width;
    float* dg = da + width;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) {
      const float v = load(a, c);
      da[c] = dyr[c] * load(g, c) * Form::derivative(v);
      dg[c] = dyr[c] * Form::value(v);
    }
  }
}

}  // namespace

void CpuBackend::gated_gelu_forward(const loom::Tensor& x, const loom::Tensor& y, loom::Gelu variant) {
  run_op(
      "gated_gelu_forward",
      [&](const ArgumentChecks& check) { return loom_backend::check_gated_gelu_forward(check, x, y); },
      {x.dtype},
      [&](const loom_backend::GatedRows& shape, auto xs) {
        using SX = decltype(xs);
        auto run = [&](auto ys) {
          using SY = decltype(ys);
          with_gelu_form(variant, [&](auto form) {
            gated_rows<decltype(form)>(static_cast<const SX*>(x.data), static_cast<SY*>(y.data), shape.rows,
                                       shape.width, threads_);
          });
        };
        // y is f32 or x's dtype (the contract): a choice of two, not a dispatch over the three
        // storage types.
        if (y.dtype == DType::f32)
          run(float{});
        else
          run(SX{});
      });
}

void CpuBackend::gated_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& dx,
                                     loom::Gelu variant) {
  run_op(
      "gated_gelu_backward",
      [&](const ArgumentChecks& check) { return loom_backend::check_gated_gelu_backward(check, dy, x, dx); },
      {x.dtype},
      [&](const loom_backend::GatedRows& shape, auto xs) {
        using SX = decltype(xs);
        with_gelu_form(variant, [&](auto form) {
          gated_backward_rows<decltype(form)>(static_cast<const float*>(dy.data),
                                              static_cast<const SX*>(x.data), static_cast<float*>(dx.data),
                                              shape.rows, shape.width, threads_);
        });
      });
}

}  // namespace loom_cpu
