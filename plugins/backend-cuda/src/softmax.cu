// Attention softmax: forward with scale and additive key mask, backward; and the mask itself.
//
// One warp per row (batch, head, query); three passes over the row (max, Σexp, normalise), lane
// partials combined by a fixed butterfly. A row whose keys are all masked holds equal values
// (scale·s + kMaskedKey rounds to kMaskedKey), so it comes out uniform as on the CPU. probs may
// alias scores and dscores dprobs: every lane reads an element before writing it, and no other
// lane touches it.
#include <cmath>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

template <typename M>
__global__ void additive_key_mask_kernel(const M* mask, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = mask[i] != M(0) ? 0.0f : loom::kMaskedKey;
}

template <typename SI, typename SO>
__global__ void softmax_forward_kernel(const SI* scores, const float* mask, float scale, SO* probs,
                                       int64_t rows, int64_t cols, int64_t rows_per_batch) {
  const int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const SI* in = scores + row * cols;
  SO* out = probs + row * cols;
  const float* m = mask != nullptr ? mask + (row / rows_per_batch) * cols : nullptr;
  float max = -INFINITY;
  for (int64_t c = lane; c < cols; c += 32)
    max = fmaxf(max, scale * load(in, c) + (m != nullptr ? m[c] : 0.0f));
  max = warp_max(max);
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32)
    sum += expf(scale * load(in, c) + (m != nullptr ? m[c] : 0.0f) - max);
  const float inv = 1.0f / warp_sum(sum);
  for (int64_t c = lane; c < cols; c += 32)
    store(out, c, expf(scale * load(in, c) + (m != nullptr ? m[c] : 0.0f) - max) * inv);
}

template <typename SP>
__global__ void softmax_backward_kernel(const float* dprobs, const SP* probs, float scale, float* dscores,
                                        int64_t rows, int64_t cols) {
  const int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* dp = dprobs + row * cols;
  const SP* p = probs + row * cols;
  float* ds = dscores + row * cols;
  float dot = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) dot += dp[c] * load(p, c);
  dot = warp_sum(dot);
  for (int64_t c = lane; c < cols; c += 32) ds[c] = scale * load(p, c) * (dp[c] - dot);
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void CudaBackend::additive_key_mask(const loom::Tensor& attention_mask, const loom::Tensor& out) {
  const auto check = checks("additive_key_mask");
  loom_backend::check_additive_key_mask(check, attention_mask, out);
  const int64_t n = out.numel();
  if (n == 0) return;
  float* o = static_cast<float*>(out.data);
  const unsigned blocks = grid_for(n, 256);
  switch (attention_mask.dtype) {
    case DType::i32:
      additive_key_mask_kernel<<<blocks, 256, 0, stream_>>>(static_cast<const int32_t*>(attention_mask.data),
                                                            o, n);
      break;
    case DType::i64:
      additive_key_mask_kernel<<<blocks, 256, 0, stream_>>>(static_cast<const int64_t*>(attention_mask.data),
                                                            o, n);
      break;
    default:
      additive_key_mask_kernel<<<blocks, 256, 0, stream_>>>(static_cast<const float*>(attention_mask.data), o,
                                                            n);
      break;
  }
  check_launch("additive_key_mask");
}

void CudaBackend::softmax_forward(const loom::Tensor& scores, const loom::Tensor& key_mask, float scale,
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
        softmax_forward_kernel<SI, SO><<<row_blocks(shape.rows), 32 * kWarpsPerBlock, 0, stream_>>>(
            static_cast<const SI*>(scores.data), mask, scale, static_cast<SO*>(probs.data), shape.rows,
            shape.cols, shape.rows_per_batch);
      });
}

void CudaBackend::softmax_backward(const loom::Tensor& dprobs, const loom::Tensor& probs, float scale,
                                   const loom::Tensor& dscores) {
  run_op(
      "softmax_backward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_softmax_backward(check, dprobs, probs, dscores);
      },
      {probs.dtype},
      [&](const loom_backend::SoftmaxRows& shape, auto pt) {
        using SP = decltype(pt);
        softmax_backward_kernel<SP><<<row_blocks(shape.rows), 32 * kWarpsPerBlock, 0, stream_>>>(
            static_cast<const float*>(dprobs.data), static_cast<const SP*>(probs.data), scale,
            static_cast<float*>(dscores.data), shape.rows, shape.cols);
      });
}

}  // namespace loom_cuda
