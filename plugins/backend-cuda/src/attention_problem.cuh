// The fused attention problem, shared by attention_forward.cu and attention_backward.cu:
// per-head views, the problem shape, argument validation and the dropout decision.
#pragma once

#include <cstdint>
#include <string>

#include "loom/sdk/philox.hpp"
#include "loom_backend/argument_checks.hpp"
#include "philox_device.cuh"

namespace loom_cuda {

using loom_backend::ArgumentChecks;

inline constexpr int kAttentionMaxHeadDim = 128;

/// A [B, H, T, d] view with the last dimension contiguous and the other strides free (the
/// per-head views of a [B·T, H·d] activation).
template <typename S>
struct HeadView {
  S* data;
  int64_t batch_stride, head_stride, row_stride;
  __device__ __forceinline__ S* row(int64_t b, int64_t h, int64_t i) const {
    return data + b * batch_stride + h * head_stride + i * row_stride;
  }
};

template <typename S>
HeadView<S> head_view(const loom::Tensor& t) {
  return HeadView<S>{static_cast<S*>(t.data), t.strides[0], t.strides[1], t.strides[2]};
}

/// The shape and the scalar parameters every attention kernel takes.
struct AttentionShape {
  int64_t batch, heads, seq, head_dim;
  float scale;
  bool dropout;
  uint32_t threshold;  // dropout_threshold(p)
  float inv_keep;      // 1 / (1 − p)
  uint64_t seed, offset;
};

/// Whether dropout keeps probability element (bh, i, j): the element index of a contiguous
/// [B, H, T, T] tensor, ((b·H + h)·T + i)·T + j, as backend2.hpp prescribes.
__device__ __forceinline__ bool attention_keeps(const AttentionShape& shape, int64_t bh, int64_t i,
                                                int64_t j) {
  const uint64_t element = static_cast<uint64_t>((bh * shape.seq + i) * shape.seq + j);
  return philox_word(shape.seed, shape.offset + element) >= shape.threshold;
}

/// Rows whose keys are all masked have lse ≈ kMaskedKey (every score rounds to it): their
/// probabilities are uniform, 1/T, which exp(s − lse) cannot recover in f32.
__device__ __forceinline__ bool all_keys_masked(float lse) {
  return lse < -1.0e37f;
}

/// Validates a [B, H, T, d] head view and returns nothing; `reference` gives the shape.
inline void check_head_view(const ArgumentChecks& check, const char* name, const loom::Tensor& t,
                            const loom::Tensor& reference) {
  check.on_device(name, t);
  check.require(t.ndim == 4, std::string(name) + " " + t.describe() + " must be [B, H, T, d]");
  check.same_shape(name, t, "q", reference);
  check.require(t.shape[3] <= 1 || t.strides[3] == 1,
                std::string(name) + " " + t.describe() + " must have stride 1 in its last dimension");
}

/// Checks shared by forward and backward; returns the shape.
inline AttentionShape check_attention(const ArgumentChecks& check, const loom::Tensor& q,
                                      const loom::Tensor& k, const loom::Tensor& v,
                                      const loom::Tensor& key_mask, const loom::Tensor& lse, float scale,
                                      float p, uint64_t seed, uint64_t offset) {
  check.on_device("q", q);
  check.require(q.ndim == 4, "q " + q.describe() + " must be [B, H, T, d]");
  check.dtype("q", q, {loom::DType::f32, loom::DType::bf16, loom::DType::f16});
  check_head_view(check, "q", q, q);
  check_head_view(check, "k", k, q);
  check_head_view(check, "v", v, q);
  check.require(k.dtype == q.dtype && v.dtype == q.dtype, "q, k and v need one dtype");
  AttentionShape shape{q.shape[0], q.shape[1], q.shape[2], q.shape[3], scale,
                       p > 0.0f,   0u,         1.0f,       seed,       offset};
  check.require(shape.head_dim >= 1 && shape.head_dim <= kAttentionMaxHeadDim,
                "head dim " + std::to_string(shape.head_dim) + " is outside [1, 128]");
  check.require(shape.batch * shape.heads <= 65535, "at most 65535 batch·heads");
  if (check.optional("key_mask", key_mask, {loom::DType::f32}))
    check.shape("key_mask", key_mask, {shape.batch, shape.seq});
  check.tensor("lse", lse, {loom::DType::f32});
  check.shape("lse", lse, {shape.batch, shape.heads, shape.seq});
  check.require(p >= 0.0f && p < 1.0f, "drop probability " + std::to_string(p) + " is outside [0, 1)");
  shape.threshold = loom::dropout_threshold(p);
  shape.inv_keep = 1.0f / (1.0f - p);
  return shape;
}

}  // namespace loom_cuda
