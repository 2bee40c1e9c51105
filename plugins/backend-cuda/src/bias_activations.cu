// bias_add, bias_grad, fused bias + GELU (erf and tanh forms) forward/backward, tanh, add and
// axpby: the memory-bound elementwise glue between GEMMs.
//
// Elementwise kernels are grid-stride loops over the dense views. bias_add, bias + GELU, add and
// axpby move four elements per thread in one access each (row_quads.cuh) when the sizes and the
// views' alignment allow (add and axpby: all but a scalar tail), chosen on the host, else one
// element per thread; the arithmetic per element is the same, so both paths give the same bits.
// The bias gradients (bias_grad and GELU's dbias) are deterministic column sums (column_sums.cuh),
// never float atomics.
#include <cmath>
#include <type_traits>

#include "column_sums.cuh"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "gelu_forms.cuh"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "row_quads.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;

#define LOOM_GRID_STRIDE(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

/// x[r, c] += bias[(r mod P), c]: the element index e = r·C + c, so the bias row is (e / C) mod P.
__global__ void bias_add_kernel(float* x, const float* bias, int64_t n, int64_t cols, int64_t period) {
  LOOM_GRID_STRIDE(e, n) {
    const int64_t row = e / cols, col = e - row * cols;
    x[e] += bias[(row % period) * cols + col];
  }
}

/// bias_add four columns at a time: C % 4 == 0 and both views 16-byte aligned.
__global__ void bias_add_vector_kernel(float4* x, const float4* bias, int64_t n4, int64_t cols4,
                                       int64_t period) {
  LOOM_GRID_STRIDE(e, n4) {
    const int64_t row = e / cols4, col = e - row * cols4;
    const float4 b = bias[(row % period) * cols4 + col];
    float4 v = x[e];
    v.x += b.x;
    v.y += b.y;
    v.z += b.z;
    v.w += b.w;
    x[e] = v;
  }
}

/// y = gelu(x + bias); bias may be null. y may alias x (each element read before written).
template <typename SX, typename SY>
__global__ void bias_gelu_forward_kernel(const SX* x, const float* bias, SY* y, int64_t n, int64_t cols,
                                         bool erf_form) {
  LOOM_GRID_STRIDE(e, n) {
    const float v = load(x, e) + (bias != nullptr ? bias[e % cols] : 0.0f);
    store(y, e, gelu(v, erf_form));
  }
}

/// Quads per thread and step of bias_gelu_forward_quads_kernel: all loaded before any is computed,
/// so a thread has 2 × 8 bytes of a 16-bit x in flight, not 8 — one 8-byte load per thread kept the
/// H200 at 1.8 TB/s on bert-large's [N, 4096] GELU, where the loads' latency, not the bandwidth or
/// the arithmetic, set the pace.
constexpr int kGeluQuadsPerStep = 2;

/// bias_gelu_forward_kernel four elements per quad: quad q holds elements 4q .. 4q + 3 of x and y
/// and bias quad q mod (C / 4); a thread takes kGeluQuadsPerStep consecutive quads per step. C % 4
/// == 0, x and y is_quad_aligned, bias (when given) 16-byte aligned. y may alias x (a thread reads
/// its quads before writing them).
template <typename SX, typename SY>
__global__ void bias_gelu_forward_quads_kernel(const SX* x, const float* bias, SY* y, int64_t quads,
                                               int64_t col_quads, bool erf_form) {
  constexpr int kStep = kGeluQuadsPerStep;
  LOOM_GRID_STRIDE(s, (quads + kStep - 1) / kStep) {
    float v[kStep][4], b[kStep][4] = {};  // + 0.0f without a bias, as the scalar kernel adds
#pragma unroll
    for (int h = 0; h < kStep; ++h) {
      const int64_t q = kStep * s + h;
      if (q >= quads) continue;
      load_quad(x, q, 4 * quads, true, v[h]);
      if (bias != nullptr) load_quad(bias, q % col_quads, 4 * col_quads, true, b[h]);
    }
#pragma unroll
    for (int h = 0; h < kStep; ++h) {
      const int64_t q = kStep * s + h;
      if (q >= quads) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) v[h][j] = gelu(v[h][j] + b[h][j], erf_form);
      store_quad(y, q, 4 * quads, true, v[h]);
    }
  }
}

/// dx = dy ⊙ gelu'(x + bias), and its 16-bit copy in dx_compute when that is given (rounded as
/// cast rounds); dx may alias dy.
template <typename SX, typename SC>
__global__ void bias_gelu_backward_kernel(const float* dy, const SX* x, const float* bias, float* dx,
                                          SC* dx_compute, int64_t n, int64_t cols, bool erf_form) {
  LOOM_GRID_STRIDE(e, n) {
    const float v = load(x, e) + (bias != nullptr ? bias[e % cols] : 0.0f);
    const float g = __fmul_rn(dy[e], gelu_derivative(v, erf_form));
    dx[e] = g;
    if (dx_compute != nullptr) store(dx_compute, e, g);
  }
}

/// bias_gelu_backward_kernel four elements per thread (quads as bias_gelu_forward_quads_kernel;
/// dy and dx 16-byte aligned, dx_compute is_quad_aligned when given). dx may alias dy.
template <typename SX, typename SC>
__global__ void bias_gelu_backward_quads_kernel(const float* dy, const SX* x, const float* bias, float* dx,
                                                SC* dx_compute, int64_t quads, int64_t col_quads,
                                                bool erf_form) {
  LOOM_GRID_STRIDE(q, quads) {
    float g[4], v[4], b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    load_quad(dy, q, 4 * quads, true, g);
    load_quad(x, q, 4 * quads, true, v);
    if (bias != nullptr) load_quad(bias, q % col_quads, 4 * col_quads, true, b);
#pragma unroll
    for (int j = 0; j < 4; ++j) g[j] = __fmul_rn(g[j], gelu_derivative(v[j] + b[j], erf_form));
    store_quad(dx, q, 4 * quads, true, g);
    if (dx_compute != nullptr) store_quad(dx_compute, q, 4 * quads, true, g);
  }
}

/// bias_gelu_backward_kernel's dx as a column-sum term (column_sums.cuh), for dbias = its column
/// sums: each element computed once, as that kernel computes it, stored to dx and to its 16-bit
/// copy when those are given (null: not stored), and summed — dx is never read back. dx may alias dy.
template <typename SX, typename SC>
struct GeluGradientTerm {
  const float* dy;
  const SX* x;
  const float* bias;
  float* dx;
  SC* copy;
  int64_t cols;
  bool erf_form;
  __device__ void operator()(int64_t row, int64_t col, float* values) const {
    const int64_t e = row * cols + col;
    const float v = load(x, e) + (bias != nullptr ? bias[col] : 0.0f);
    // _rn: the product is rounded before it is summed (no FMA into the column sum), so dbias is
    // the sum of the dx this term stores, whether or not it stores it.
    const float g = __fmul_rn(dy[e], gelu_derivative(v, erf_form));
    if (dx != nullptr) dx[e] = g;
    if (copy != nullptr) store(copy, e, g);
    values[0] = g;
  }
};

__global__ void tanh_forward_kernel(const float* x, float* y, int64_t n) {
  LOOM_GRID_STRIDE(i, n) {
    y[i] = tanhf(x[i]);
  }
}

__global__ void tanh_backward_kernel(const float* dy, const float* y, float* dx, int64_t n) {
  LOOM_GRID_STRIDE(i, n) {
    const float t = y[i];
    dx[i] = dy[i] * (1.0f - t * t);
  }
}

/// f32 residual add four elements at a time (16-byte aligned views; the tail goes to add_kernel).
__global__ void add_vector_kernel(const float4* a, const float4* b, float4* out, int64_t n4) {
  LOOM_GRID_STRIDE(i, n4) {
    const float4 x = a[i], y = b[i];
    out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

template <typename A, typename B, typename O>
__global__ void add_kernel(const A* a, const B* b, O* out, int64_t n) {
  LOOM_GRID_STRIDE(i, n) {
    store(out, i, load(a, i) + load(b, i));
  }
}

/// y = alpha·x + beta·y, four elements per thread when both views are 16-byte aligned.
__global__ void axpby_vector_kernel(float alpha, const float4* x, float beta, float4* y, int64_t n4,
                                    bool read_y) {
  LOOM_GRID_STRIDE(i, n4) {
    const float4 xv = x[i];
    float4 out = make_float4(alpha * xv.x, alpha * xv.y, alpha * xv.z, alpha * xv.w);
    if (read_y) {
      const float4 yv = y[i];
      out = make_float4(out.x + beta * yv.x, out.y + beta * yv.y, out.z + beta * yv.z, out.w + beta * yv.w);
    }
    y[i] = out;
  }
}

__global__ void axpby_kernel(float alpha, const float* x, float beta, float* y, int64_t begin, int64_t n,
                             bool read_y) {
  for (int64_t i = begin + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = read_y ? alpha * x[i] + beta * y[i] : alpha * x[i];
}

#undef LOOM_GRID_STRIDE

/// bias_add's and bias_grad's shared contract, then this backend's own limit: the bias rows index
/// a grid dimension (at most 65535).
loom_backend::BiasRows check_bias_launch_rows(const ArgumentChecks& check, const char* x_name,
                                              const loom::Tensor& x, const char* bias_name,
                                              const loom::Tensor& bias) {
  const loom_backend::BiasRows shape = loom_backend::check_bias_rows(check, x_name, x, bias_name, bias);
  check.require(shape.period <= 65535,
                std::string(bias_name) + " " + bias.describe() + ": at most 65535 rows");
  return shape;
}

}  // namespace

void CudaBackend::bias_add(const loom::Tensor& x, const loom::Tensor& bias) {
  run_op(
      "bias_add",
      [&](const ArgumentChecks& check) { return check_bias_launch_rows(check, "x", x, "bias", bias); },
      [&](const loom_backend::BiasRows& shape) {
        const int64_t cols = shape.cols, period = shape.period;
        const int64_t n = x.numel();
        if (cols % 4 == 0 && is_aligned16(x.data) && is_aligned16(bias.data))
          bias_add_vector_kernel<<<grid_for(n / 4, kThreads), kThreads, 0, stream_>>>(
              static_cast<float4*>(x.data), static_cast<const float4*>(bias.data), n / 4, cols / 4, period);
        else
          bias_add_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_>>>(
              static_cast<float*>(x.data), static_cast<const float*>(bias.data), n, cols, period);
      });
}

void CudaBackend::bias_grad(const loom::Tensor& dy, const loom::Tensor& dbias) {
  run_op(
      "bias_grad",
      [&](const ArgumentChecks& check) { return check_bias_launch_rows(check, "dy", dy, "dbias", dbias); },
      [&](const loom_backend::BiasRows& shape) {
        const int64_t cols = shape.cols;
        const ColumnSumPlan plan = ColumnSumPlan::make(shape.rows, cols, shape.period);
        float* partial = static_cast<float*>(scratch(plan.scratch_floats(1) * sizeof(float)));
        float* const out[1] = {static_cast<float*>(dbias.data)};
        accumulate_column_sums<1>(DenseColumnTerm{static_cast<const float*>(dy.data), cols}, plan, partial,
                                  out, stream_);
      });
}

void CudaBackend::bias_grad_copy(const loom::Tensor& dy, const loom::Tensor& dbias, const loom::Tensor& dy_compute) {
  run_op(
      "bias_grad_copy",
      [&](const ArgumentChecks& check) {
        const loom_backend::BiasRows shape = check_bias_launch_rows(check, "dy", dy, "dbias", dbias);
        (void)loom_backend::check_bias_grad_copy(check, dy, dbias, dy_compute);
        return shape;
      },
      [&](const loom_backend::BiasRows& shape) {
        const ColumnSumPlan plan = ColumnSumPlan::make(shape.rows, shape.cols, shape.period);
        float* partial = static_cast<float*>(scratch(plan.scratch_floats(1) * sizeof(float)));
        float* const out[1] = {static_cast<float*>(dbias.data)};
        const auto* x = static_cast<const float*>(dy.data);
        if (dy_compute.dtype == DType::f16)
          accumulate_column_sums<1>(
              DenseColumnCopyTerm<loom::Half>{x, static_cast<loom::Half*>(dy_compute.data), shape.cols}, plan,
              partial, out, stream_);
        else
          accumulate_column_sums<1>(
              DenseColumnCopyTerm<loom::BFloat16>{x, static_cast<loom::BFloat16*>(dy_compute.data), shape.cols},
              plan, partial, out, stream_);
      });
}

void CudaBackend::bias_gelu_forward(const loom::Tensor& x, const loom::Tensor& bias, const loom::Tensor& y,
                                    loom::Gelu variant) {
  run_op(
      "bias_gelu_forward",
      [&](const ArgumentChecks& check) {
        const int64_t cols = loom_backend::check_bias_gelu_forward(check, x, bias, y);
        return ElementRows{x.numel(), cols};
      },
      {x.dtype, y.dtype},
      [&](const ElementRows& shape, auto xs, auto ys) {
        using SX = decltype(xs);
        using SY = decltype(ys);
        const int64_t n = shape.count, cols = shape.cols;
        const float* b = bias.defined() ? static_cast<const float*>(bias.data) : nullptr;
        const auto* xs_data = static_cast<const SX*>(x.data);
        auto* ys_data = static_cast<SY*>(y.data);
        const bool erf_form = variant == loom::Gelu::erf;
        if (cols % 4 == 0 && is_quad_aligned<SX>(xs_data) && is_quad_aligned<SY>(ys_data) &&
            (b == nullptr || is_aligned16(b)))
          bias_gelu_forward_quads_kernel<SX, SY>
              <<<grid_for((n / 4 + kGeluQuadsPerStep - 1) / kGeluQuadsPerStep, kThreads), kThreads, 0, stream_>>>(
                  xs_data, b, ys_data, n / 4, cols / 4, erf_form);
        else
          bias_gelu_forward_kernel<SX, SY>
              <<<grid_for(n, kThreads), kThreads, 0, stream_>>>(xs_data, b, ys_data, n, cols, erf_form);
      });
}

template <typename Contract>
void CudaBackend::gelu_gradient(const char* op, Contract&& contract, const loom::Tensor& dy,
                                const loom::Tensor& x, const loom::Tensor& bias, const loom::Tensor& dx,
                                const loom::Tensor& dx_compute, const loom::Tensor& dbias,
                                loom::Gelu variant) {
  // The copy's storage type; without a copy the kernels get a null BFloat16 pointer and store none.
  const DType copy_dtype = dx_compute.defined() ? dx_compute.dtype : DType::bf16;
  run_op(
      op,
      [&](const ArgumentChecks& check) {
        const int64_t cols = contract(check);
        return ElementRows{x.numel(), cols};
      },
      {x.dtype, copy_dtype},
      [&](const ElementRows& shape, auto xs, auto cs) {
        using SX = decltype(xs);
        using SC = decltype(cs);
        const int64_t n = shape.count, cols = shape.cols;
        const int64_t rows = n / cols;
        const float* b = bias.defined() ? static_cast<const float*>(bias.data) : nullptr;
        const auto* dys = static_cast<const float*>(dy.data);
        const auto* xs_data = static_cast<const SX*>(x.data);
        auto* dxs = static_cast<float*>(dx.data);  // null when absent (bias_gelu_backward_copy)
        auto* copy = static_cast<SC*>(dx_compute.data);
        const bool erf_form = variant == loom::Gelu::erf;
        if (dbias.defined()) {
          // One pass computes, stores and sums each element (fixed order: the same dbias bits as
          // summing a stored dx); an absent dx is never written.
          const ColumnSumPlan plan = ColumnSumPlan::make(rows, cols, 1);
          float* partial = static_cast<float*>(scratch(plan.scratch_floats(1) * sizeof(float)));
          float* const out[1] = {static_cast<float*>(dbias.data)};
          accumulate_column_sums<1>(GeluGradientTerm<SX, SC>{dys, xs_data, b, dxs, copy, cols, erf_form}, plan,
                                    partial, out, stream_);
          return;
        }
        // Without dbias an absent dx is computed in dy's place (the interface allows it).
        float* result = dxs != nullptr ? dxs : static_cast<float*>(dy.data);
        if (cols % 4 == 0 && is_aligned16(dys) && is_quad_aligned<SX>(xs_data) && is_aligned16(result) &&
            (b == nullptr || is_aligned16(b)) && (copy == nullptr || is_quad_aligned<SC>(copy)))
          bias_gelu_backward_quads_kernel<SX, SC><<<grid_for(n / 4, kThreads), kThreads, 0, stream_>>>(
              dys, xs_data, b, result, copy, n / 4, cols / 4, erf_form);
        else
          bias_gelu_backward_kernel<SX, SC><<<grid_for(n, kThreads), kThreads, 0, stream_>>>(
              dys, xs_data, b, result, copy, n, cols, erf_form);
      });
}

void CudaBackend::bias_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                                     const loom::Tensor& dx, const loom::Tensor& dbias, loom::Gelu variant) {
  gelu_gradient(
      "bias_gelu_backward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_bias_gelu_backward(check, dy, x, bias, dx, dbias);
      },
      dy, x, bias, dx, loom::Tensor{}, dbias, variant);
}

void CudaBackend::bias_gelu_backward_copy(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                                          const loom::Tensor& dx, const loom::Tensor& dx_compute,
                                          const loom::Tensor& dbias, loom::Gelu variant) {
  gelu_gradient(
      "bias_gelu_backward_copy",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_bias_gelu_backward_copy(check, dy, x, bias, dx, dx_compute, dbias);
      },
      dy, x, bias, dx, dx_compute, dbias, variant);
}

void CudaBackend::tanh_forward(const loom::Tensor& x, const loom::Tensor& y) {
  run_op(
      "tanh_forward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_tanh_forward(check, x, y);
        return Elements{x.numel()};
      },
      [&](Elements n) {
        tanh_forward_kernel<<<grid_for(n.count, kThreads), kThreads, 0, stream_>>>(
            static_cast<const float*>(x.data), static_cast<float*>(y.data), n.count);
      });
}

void CudaBackend::tanh_backward(const loom::Tensor& dy, const loom::Tensor& y, const loom::Tensor& dx) {
  run_op(
      "tanh_backward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_tanh_backward(check, dy, y, dx);
        return Elements{y.numel()};
      },
      [&](Elements n) {
        tanh_backward_kernel<<<grid_for(n.count, kThreads), kThreads, 0, stream_>>>(
            static_cast<const float*>(dy.data), static_cast<const float*>(y.data),
            static_cast<float*>(dx.data), n.count);
      });
}

void CudaBackend::add(const loom::Tensor& a, const loom::Tensor& b, const loom::Tensor& out) {
  run_op(
      "add",
      [&](const ArgumentChecks& check) {
        loom_backend::check_add(check, a, b, out);
        return Elements{out.numel()};
      },
      {a.dtype, b.dtype, out.dtype},
      [&](Elements elements, auto at, auto bt, auto ot) {
        using A = decltype(at);
        using B = decltype(bt);
        using O = decltype(ot);
        const int64_t n = elements.count;
        const auto* as = static_cast<const A*>(a.data);
        const auto* bs = static_cast<const B*>(b.data);
        auto* os = static_cast<O*>(out.data);
        if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float> && std::is_same_v<O, float>) {
          if (is_aligned16(as) && is_aligned16(bs) && is_aligned16(os)) {
            const int64_t n4 = n / 4, done = n4 * 4;
            if (n4 > 0)
              add_vector_kernel<<<grid_for(n4, kThreads), kThreads, 0, stream_>>>(
                  reinterpret_cast<const float4*>(as), reinterpret_cast<const float4*>(bs),
                  reinterpret_cast<float4*>(os), n4);
            if (done < n)
              add_kernel<float, float, float>
                  <<<1, kThreads, 0, stream_>>>(as + done, bs + done, os + done, n - done);
            return;
          }
        }
        add_kernel<A, B, O><<<grid_for(n, kThreads), kThreads, 0, stream_>>>(as, bs, os, n);
      });
}

void CudaBackend::axpby(float alpha, const loom::Tensor& x, float beta, const loom::Tensor& y) {
  run_op(
      "axpby",
      [&](const ArgumentChecks& check) {
        loom_backend::check_axpby(check, x, y);
        return Elements{y.numel()};
      },
      [&](Elements elements) {
        const int64_t n = elements.count;
        const bool read_y = beta != 0.0f;  // beta = 0 never reads y
        const auto* xs = static_cast<const float*>(x.data);
        auto* ys = static_cast<float*>(y.data);
        int64_t vector_end = 0;
        if (is_aligned16(xs) && is_aligned16(ys)) {
          const int64_t n4 = n / 4;
          vector_end = n4 * 4;
          if (n4 > 0)
            axpby_vector_kernel<<<grid_for(n4, kThreads), kThreads, 0, stream_>>>(
                alpha, reinterpret_cast<const float4*>(xs), beta, reinterpret_cast<float4*>(ys), n4, read_y);
        }
        if (vector_end < n)
          axpby_kernel<<<grid_for(n - vector_end, kThreads), kThreads, 0, stream_>>>(alpha, xs, beta, ys,
                                                                                     vector_end, n, read_y);
      });
}

}  // namespace loom_cuda
