// PackedAttention: attention and rotary positions over packed sequences — a batch's real tokens
// back to back with no padding (BatchView's packed layout, block.hpp) — a named interface
// (interfaces.hpp) an encoder layer asks for at setup. FlashAttention-2's variable-length entry
// points are the model: sequence s holds tokens [starts[s], starts[s + 1]), and a token attends
// only to keys of its own sequence.
//
// For every head h and query token i of sequence s, with keys j of the same sequence:
//   s[i, j] = scale·q[i]·k[j]                    for |i − j| ≤ window (every key when window < 0)
//   p[i, :] = softmax(s[i, :]),  ctx[i] = Σ_j dropout(p)[i, j]·v[j]
// Every sequence holds at least one token, and a query always sees itself, so no row is empty.
// A packed batch computes what the padded batch of the same sequences computes at its real
// positions (windowed attention's band counted in columns equals the band counted in tokens,
// since a sequence's tokens are consecutive columns of its padded row).
//
// Dropout: element (h, i, j) of the probabilities is dropped exactly when dropout_forward(p, seed,
// offset) would drop element (h·N + i)·N + j of a contiguous [1, H, N, N] tensor — FusedAttention's
// rule for B = 1 and T = N (i, j token indices) — so every backend drops the same elements.
//
// Views: q, k, v, ctx and their gradients are [1, H, N, d] with the last dimension contiguous (the
// per-head views of a packed [N, 3·H·d] activation); lse and delta are f32 [1, H, N] contiguous;
// starts is i32 [S + 1] on the device (starts[0] = 0, increasing, starts[S] = N). `max_sequence`
// is the longest sequence's length (a host value, for kernel grids).
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class PackedAttention {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.packed_attention";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// OVERWRITE ctx and lse (lse[0, h, i] = log Σ_j exp(s[i, j]), saved for backward). dtypes as
  /// FusedAttention::attention_forward; 0 ≤ p < 1.
  virtual void packed_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& starts, int64_t max_sequence, float scale,
                                        int64_t window, float p, uint64_t seed, uint64_t offset,
                                        const Tensor& ctx, const Tensor& lse) = 0;
  /// Gradients of packed_attention_forward; dq, dk, dv (f32) and delta OVERWRITE, as
  /// FusedAttention::attention_backward. Deterministic (no float atomics).
  virtual void packed_attention_backward(const Tensor& d_ctx, const Tensor& q, const Tensor& k,
                                         const Tensor& v, const Tensor& ctx, const Tensor& lse,
                                         const Tensor& starts, int64_t max_sequence, float scale,
                                         int64_t window, float p, uint64_t seed, uint64_t offset,
                                         const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                         const Tensor& delta) = 0;
  /// RotaryEmbedding::rotary_apply (rotary_embedding.hpp) where row t of the [1, H, N, d] views is
  /// at position positions[t] (i32 [N] on the device, each ≥ 0) instead of t.
  virtual void packed_rotary_apply(const Tensor& x, const Tensor& y, const Tensor& positions, double theta,
                                   bool inverse) = 0;

 protected:
  ~PackedAttention() = default;
};

LOOM_SDK_NAMESPACE_END
