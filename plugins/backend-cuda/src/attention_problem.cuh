// The fused attention problem, shared by attention_forward.cu and attention_backward.cu:
// per-head views, the problem shape, argument validation and the dropout decision.
#pragma once

#include <cstdint>
#include <string>

#include "loom/sdk/philox.hpp"
#include "loom_backend/argument_checks.hpp"
#include "loom_backend/attention_contract.hpp"
#include "attention_shape.hpp"
#include "float_storage.cuh"
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

/// Block-cooperative copy of rows [first, first + count) of head (b, h) of `view` into the f32
/// shared-memory tile `tile` (row pitch `pitch` floats: d, or d + 1 where lanes read columns of
/// different rows); rows at or past `seq` become zeros.
template <typename S>
__device__ __forceinline__ void stage_rows(float* tile, int pitch, HeadView<const S> view, int64_t b, int64_t h,
                                           int64_t first, int count, int64_t seq, int d) {
  for (int idx = threadIdx.x; idx < count * d; idx += blockDim.x) {
    const int r = idx / d, c = idx - r * d;
    tile[r * pitch + c] = first + r < seq ? load(view.row(b, h, first + r), c) : 0.0f;
  }
}

/// Whether dropout keeps probability element (bh, i, j): the element index of a contiguous
/// [B, H, T, T] tensor, ((b·H + h)·T + i)·T + j, as loom/sdk/ops/fused_attention.hpp prescribes.
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

/// The shape of a validated call (loom_backend/attention_contract.hpp) plus this backend's kernel
/// limits: head dim ≤ 128 (registers hold a row as up to four 32-lane chunks), B·H ≤ 65535 (grid y).
/// `window`: the band of windowed attention, < 0 for none (FusedAttention); one that reaches every
/// key is none as well (loom_backend::effective_window), so such a call runs FusedAttention's
/// kernels and gives its bits.
inline AttentionShape attention_shape(const ArgumentChecks& check, const loom_backend::AttentionDims& n,
                                      float scale, int64_t window, float p, uint64_t seed, uint64_t offset) {
  check.require(n.head_dim >= 1 && n.head_dim <= kAttentionMaxHeadDim,
                "head dim " + std::to_string(n.head_dim) + " is outside [1, 128]");
  check.require(n.batch * n.heads <= 65535, "at most 65535 batch·heads");
  return AttentionShape{n.batch,
                        n.heads,
                        n.seq,
                        n.head_dim,
                        scale,
                        p > 0.0f,
                        loom::dropout_threshold(p),
                        1.0f / (1.0f - p),
                        seed,
                        offset,
                        loom_backend::effective_window(window, n.seq)};
}

}  // namespace loom_cuda
