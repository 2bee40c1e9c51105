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
// Each sequence is, in every respect, FusedAttention (WindowedAttention with a window) over a batch
// of one row of its length L without a key mask:
// - dropout: element (h, i', j') of sequence s (positions within it) is dropped exactly when
//   dropout_forward(p, seed, offset) would drop element H·P_s + (h·L + i')·L + j', P_s = Σ L² over
//   the sequences before s — the sequences' [H, L, L] probability matrices laid out one after
//   another, as an unfused layer stores them — so every backend drops the same elements;
// - lse and delta: f32 [1, H, N] tensors (H·N contiguous floats) holding sequence s's [H, L] block
//   from float H·starts[s] on.
// A backend may therefore run its fused attention on each sequence in turn (backend/cpu and
// backend/cuda do), or all of them in one launch.
//
// Views: q, k, v, ctx and their gradients are [1, H, N, d] with the last dimension contiguous (the
// per-head views of a packed [N, 3·H·d] activation); starts is i32 [S + 1] on the device
// (starts[0] = 0, increasing, starts[S] = N) and `starts_host` the same values in host memory;
// `max_sequence` is the longest sequence's length.
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class PackedAttention {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.packed_attention";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// OVERWRITE ctx and lse (each row's log Σ_j exp(s[i, j]), saved for backward). dtypes as
  /// FusedAttention::attention_forward; 0 ≤ p < 1.
  virtual void packed_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& starts,
                                        const int32_t* starts_host, int64_t max_sequence, float scale,
                                        int64_t window, float p, uint64_t seed, uint64_t offset, const Tensor& ctx,
                                        const Tensor& lse) = 0;
  /// Gradients of packed_attention_forward; dq, dk, dv (f32) and delta OVERWRITE, as
  /// FusedAttention::attention_backward. Deterministic (no float atomics).
  virtual void packed_attention_backward(const Tensor& d_ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                         const Tensor& ctx, const Tensor& lse, const Tensor& starts,
                                         const int32_t* starts_host, int64_t max_sequence, float scale,
                                         int64_t window, float p, uint64_t seed, uint64_t offset, const Tensor& dq,
                                         const Tensor& dk, const Tensor& dv, const Tensor& delta) = 0;
  /// RotaryEmbedding::rotary_apply (rotary_embedding.hpp) where row t of the [1, H, N, d] views is
  /// at position positions[t] (i32 [N] on the device, each in [0, N): a token's position within its
  /// sequence is below N) instead of t. A position outside is an error (on a device backend possibly
  /// reported at the next synchronisation, as an embedding id outside its table is).
  virtual void packed_rotary_apply(const Tensor& x, const Tensor& y, const Tensor& positions, double theta,
                                   bool inverse) = 0;

 protected:
  ~PackedAttention() = default;
};

LOOM_SDK_NAMESPACE_END
