// Attention softmax: forward with scale and additive key mask, backward; and the mask itself.
//
// One row per (batch, head, query). The forward makes three passes over a row (max, Σexp,
// normalise); an f32 output holds exp between the last two, a bf16 output recomputes exp so it
// is rounded once. probs may alias scores: each element is read before it is written.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"
#include "vector_math.hpp"

namespace loom_cpu {
namespace {

/// exp of one row's scaled, masked, max-shifted scores through exp_in_lanes (vector_math.hpp), so a
/// row padded with masked keys equals the same row over its real keys alone. Calls f(c, exp) per
/// element in order.
template <typename SI, typename F>
void for_each_exp(const SI* in, const float* m, int64_t m_stride, float scale, float max, int64_t cols, F&& f) {
  exp_in_lanes(cols, [&](int64_t c) { return scale * load(in, c) + m[c * m_stride] - max; }, f);
}

template <typename SI, typename SO>
void softmax_rows(const SI* scores, const float* mask, float scale, SO* probs, int64_t rows, int64_t cols,
                  int64_t rows_per_batch, int threads) {
  static const float kZeros[1] = {0.0f};
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const SI* in = scores + r * cols;
    SO* out = probs + r * cols;
    const float* m = mask != nullptr ? mask + (r / rows_per_batch) * cols : kZeros;
    const int64_t m_stride = mask != nullptr ? 1 : 0;
    float max = -INFINITY;
#pragma omp simd reduction(max : max)
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, scale * load(in, c) + m[c * m_stride]);
    // Σexp in order, in double: masked keys (exp 0) past a row's real ones change nothing.
    double sum = 0.0;
    if constexpr (std::is_same_v<SO, float>) {
      // f32 output: keep exp in the output row, then normalise (one exp per element).
      for_each_exp(in, m, m_stride, scale, max, cols, [&](int64_t c, float e) {
        out[c] = e;
        sum += e;
      });
      const float inv = static_cast<float>(1.0 / sum);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) out[c] *= inv;
    } else {
      // bf16 output: recompute exp so the stored value is rounded once.
      for_each_exp(in, m, m_stride, scale, max, cols, [&](int64_t, float e) { sum += e; });
      const float inv = static_cast<float>(1.0 / sum);
      for_each_exp(in, m, m_stride, scale, max, cols, [&](int64_t c, float e) { store(out, c, e * inv); });
    }
  }
}

template <typename SP>
void softmax_backward_rows(const float* dprobs, const SP* probs, float scale, float* dscores, int64_t rows,
                           int64_t cols, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* dp = dprobs + r * cols;
    const SP* p = probs + r * cols;
    float* ds = dscores + r * cols;
    // Σ dp·p in double, as the forward's Σexp: masked keys (p = 0) past a row's real ones change it
    // by less than a float's rounding.
    double dot_sum = 0.0;
#pragma omp simd reduction(+ : dot_sum)
    for (int64_t c = 0; c < cols; ++c) dot_sum += static_cast<double>(dp[c]) * static_cast<double>(load(p, c));
    // dp − dot cancels where attention is near uniform; in double it is exact, so each gradient is
    // rounded once.
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      ds[c] = static_cast<float>(static_cast<double>(scale) * load(p, c) * (static_cast<double>(dp[c]) - dot_sum));
  }
}

}  // namespace

void CpuBackend::additive_key_mask(const loom::Tensor& attention_mask, const loom::Tensor& out) {
  const auto check = checks("additive_key_mask");
  loom_backend::check_additive_key_mask(check, attention_mask, out);
  float* o = static_cast<float*>(out.data);
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    bool attend = false;
    switch (attention_mask.dtype) {
      case DType::i32:
        attend = static_cast<const int32_t*>(attention_mask.data)[i] != 0;
        break;
      case DType::i64:
        attend = static_cast<const int64_t*>(attention_mask.data)[i] != 0;
        break;
      default:
        attend = static_cast<const float*>(attention_mask.data)[i] != 0.0f;
        break;
    }
    o[i] = attend ? 0.0f : loom::kMaskedKey;
  }
}

void CpuBackend::softmax_forward(const loom::Tensor& scores, const loom::Tensor& key_mask, float scale,
                                 const loom::Tensor& probs) {
  run_op(
      "softmax_forward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_softmax_forward(check, scores, key_mask, probs);
      },
      {scores.dtype, probs.dtype},
      [&](const loom_backend::SoftmaxRows& shape, auto st, auto pt) {
        using SI = decltype(st);
        using SO = decltype(pt);
        const float* mask = key_mask.defined() ? static_cast<const float*>(key_mask.data) : nullptr;
        softmax_rows(static_cast<const SI*>(scores.data), mask, scale, static_cast<SO*>(probs.data),
                     shape.rows, shape.cols, shape.rows_per_batch, threads_);
      });
}

void CpuBackend::softmax_backward(const loom::Tensor& dprobs, const loom::Tensor& probs, float scale,
                                  const loom::Tensor& dscores) {
  run_op(
      "softmax_backward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_softmax_backward(check, dprobs, probs, dscores);
      },
      {probs.dtype},
      [&](const loom_backend::SoftmaxRows& shape, auto pt) {
        using SP = decltype(pt);
        softmax_backward_rows(static_cast<const float*>(dprobs.data), static_cast<const SP*>(probs.data),
                              scale, static_cast<float*>(dscores.data), shape.rows, shape.cols, threads_);
      });
}

}  // namespace loom_cpu
