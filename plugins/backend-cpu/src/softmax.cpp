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
    float sum = 0.0f;
    if constexpr (std::is_same_v<SO, float>) {
      // f32 output: keep exp in the output row, then normalise (one exp per element).
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        const float e = expf(scale * load(in, c) + m[c * m_stride] - max);
        out[c] = e;
        sum += e;
      }
      const float inv = 1.0f / sum;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) out[c] *= inv;
    } else {
      // bf16 output: recompute exp so the stored value is rounded once.
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) sum += expf(scale * load(in, c) + m[c * m_stride] - max);
      const float inv = 1.0f / sum;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c)
        store(out, c, expf(scale * load(in, c) + m[c * m_stride] - max) * inv);
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
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += dp[c] * load(p, c);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) ds[c] = scale * load(p, c) * (dp[c] - dot);
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
