// gated_gelu_forward/backward (GatedGelu, loom/sdk/ops/geglu.hpp): GeGLU's y = gelu(a)·g for the
// halves a = x[:, :I], g = x[:, I:] of each row, and its gradients da = dy·g·gelu'(a),
// dg = dy·gelu(a), with the GELU forms of bias + GELU (gelu_forms.cuh).
//
// Element-wise passes: each output element is its own f32 expression, rounded once into y's
// storage (products rounded in the header's order, __fmul_rn: no FMA into them). One thread per
// quad of four columns — a and g read with one access per quad each (8 bytes for 16-bit storage,
// 16 for f32), every load of a step issued before any is computed — when I % 4 == 0 and the views
// are aligned, else one thread per element; both give the same bits.
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "gelu_forms.cuh"
#include "loom_backend/gated_gelu_contract.hpp"
#include "op_preamble.cuh"
#include "row_quads.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;
/// Quads per thread and step of the forward's quad kernel, all loaded before any is computed (two
/// loads each: the GELU forward's finding, one 8-byte load in flight per thread held the H200 at
/// 1.8 TB/s, bias_activations.cu).
constexpr int kQuadsPerStep = 2;

#define LOOM_GRID_STRIDE(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

/// y[r, c] = gelu(a[r, c])·g[r, c], one element per thread: x [N, 2I], y [N, I].
template <typename SX, typename SY>
__global__ void gated_gelu_forward_kernel(const SX* x, SY* y, int64_t n, int64_t width, bool erf_form) {
  LOOM_GRID_STRIDE(e, n) {
    const int64_t row = e / width, col = e - row * width;
    const SX* a = x + 2 * row * width;
    store(y, e, __fmul_rn(gelu(load(a, col), erf_form), load(a + width, col)));
  }
}

/// gated_gelu_forward_kernel by quads: quad q is columns 4q .. 4q + 3 of y (row q / (I/4)), with
/// the same columns of a and g; a thread takes kQuadsPerStep consecutive quads per step.
template <typename SX, typename SY>
__global__ void gated_gelu_forward_quads_kernel(const SX* x, SY* y, int64_t quads, int64_t width_quads,
                                                bool erf_form) {
  constexpr int kStep = kQuadsPerStep;
  const int64_t width = 4 * width_quads;
  LOOM_GRID_STRIDE(s, (quads + kStep - 1) / kStep) {
    float a[kStep][4], g[kStep][4];
#pragma unroll
    for (int h = 0; h < kStep; ++h) {
      const int64_t q = kStep * s + h;
      if (q >= quads) continue;
      const int64_t row = q / width_quads, col_quad = q - row * width_quads;
      const SX* input = x + 2 * row * width;
      load_quad(input, col_quad, width, true, a[h]);
      load_quad(input + width, col_quad, width, true, g[h]);
    }
#pragma unroll
    for (int h = 0; h < kStep; ++h) {
      const int64_t q = kStep * s + h;
      if (q >= quads) continue;
      float out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) out[j] = __fmul_rn(gelu(a[h][j], erf_form), g[h][j]);
      store_quad(y, q, 4 * quads, true, out);
    }
  }
}

/// da = (dy·g)·gelu'(a) and dg = dy·gelu(a) of one element (the products rounded in that order).
__device__ __forceinline__ void gated_gradients(float dy, float a, float g, bool erf_form, float& da,
                                                float& dg) {
  da = __fmul_rn(__fmul_rn(dy, g), gelu_derivative(a, erf_form));
  dg = __fmul_rn(dy, gelu(a, erf_form));
}

/// One element per thread: dy [N, I] f32, x [N, 2I], dx [N, 2I] f32.
template <typename SX>
__global__ void gated_gelu_backward_kernel(const float* dy, const SX* x, float* dx, int64_t n, int64_t width,
                                           bool erf_form) {
  LOOM_GRID_STRIDE(e, n) {
    const int64_t row = e / width, col = e - row * width;
    const SX* a = x + 2 * row * width;
    float* d = dx + 2 * row * width;
    gated_gradients(dy[e], load(a, col), load(a + width, col), erf_form, d[col], d[width + col]);
  }
}

/// gated_gelu_backward_kernel by quads (quads as the forward's; dy and dx 16-byte aligned).
template <typename SX>
__global__ void gated_gelu_backward_quads_kernel(const float* dy, const SX* x, float* dx, int64_t quads,
                                                 int64_t width_quads, bool erf_form) {
  const int64_t width = 4 * width_quads;
  LOOM_GRID_STRIDE(q, quads) {
    const int64_t row = q / width_quads, col_quad = q - row * width_quads;
    float g_out[4], a[4], g[4], da[4], dg[4];
    load_quad(dy, q, 4 * quads, true, g_out);
    load_quad(x + 2 * row * width, col_quad, width, true, a);
    load_quad(x + 2 * row * width + width, col_quad, width, true, g);
#pragma unroll
    for (int j = 0; j < 4; ++j) gated_gradients(g_out[j], a[j], g[j], erf_form, da[j], dg[j]);
    store_quad(dx + 2 * row * width, col_quad, width, true, da);
    store_quad(dx + 2 * row * width + width, col_quad, width, true, dg);
  }
}

#undef LOOM_GRID_STRIDE

}  // namespace

void CudaBackend::gated_gelu_forward(const loom::Tensor& x, const loom::Tensor& y, loom::Gelu variant) {
  run_op(
      "gated_gelu_forward",
      [&](const ArgumentChecks& check) {
        const loom_backend::GatedRows shape = loom_backend::check_gated_gelu_forward(check, x, y);
        return ElementRows{shape.rows * shape.width, shape.width};
      },
      {x.dtype},
      [&](const ElementRows& shape, auto xs) {
        using SX = decltype(xs);
        const auto run = [&](auto ys) {
          using SY = decltype(ys);
          const int64_t n = shape.count, width = shape.cols;
          const auto* input = static_cast<const SX*>(x.data);
          auto* output = static_cast<SY*>(y.data);
          const bool erf_form = variant == loom::Gelu::erf;
          if (width % 4 == 0 && is_quad_aligned<SX>(input) && is_quad_aligned<SY>(output))
            gated_gelu_forward_quads_kernel<SX, SY>
                <<<grid_for((n / 4 + kQuadsPerStep - 1) / kQuadsPerStep, kThreads), kThreads, 0, stream_>>>(
                    input, output, n / 4, width / 4, erf_form);
          else
            gated_gelu_forward_kernel<SX, SY>
                <<<grid_for(n, kThreads), kThreads, 0, stream_>>>(input, output, n, width, erf_form);
        };
        // y is f32 or x's dtype (the contract): a choice of two, not a dispatch over the three
        // storage types, so no kernel is compiled for a pairing that cannot occur.
        if (y.dtype == DType::f32)
          run(float{});
        else
          run(SX{});
      });
}

void CudaBackend::gated_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& dx,
                                      loom::Gelu variant) {
  run_op(
      "gated_gelu_backward",
      [&](const ArgumentChecks& check) {
        const loom_backend::GatedRows shape = loom_backend::check_gated_gelu_backward(check, dy, x, dx);
        return ElementRows{shape.rows * shape.width, shape.width};
      },
      {x.dtype},
      [&](const ElementRows& shape, auto xs) {
        using SX = decltype(xs);
        const int64_t n = shape.count, width = shape.cols;
        const auto* gradient = static_cast<const float*>(dy.data);
        const auto* input = static_cast<const SX*>(x.data);
        auto* result = static_cast<float*>(dx.data);
        const bool erf_form = variant == loom::Gelu::erf;
        if (width % 4 == 0 && is_aligned16(gradient) && is_quad_aligned<SX>(input) && is_aligned16(result))
          gated_gelu_backward_quads_kernel<SX><<<grid_for(n / 4, kThreads), kThreads, 0, stream_>>>(
              gradient, input, result, n / 4, width / 4, erf_form);
        else
          gated_gelu_backward_kernel<SX>
              <<<grid_for(n, kThreads), kThreads, 0, stream_>>>(gradient, input, result, n, width, erf_form);
      });
}

}  // namespace loom_cuda
