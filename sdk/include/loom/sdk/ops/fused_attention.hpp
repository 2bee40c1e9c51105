// FusedAttention: the fused scaled-dot-product attention op family of a backend (a named
// interface, interfaces.hpp). A backend that does not offer it runs attention through the
// unfused ops of backend.hpp (gemm, softmax, dropout); blocks ask once, at setup.
//
// The fused op computes, for every batch b and head h,
//   s[i, j]  = scale·q[i]·k[j] + key_mask[b, j]
//   p[i, :]  = softmax(s[i, :])                  (a row whose keys are all masked is uniform)
//   ctx[i]   = Σ_j dropout(p)[i, j]·v[j]
// without writing the [B, H, T, T] score or probability matrix to memory: backward recomputes p
// from q, k and the row log-sum-exp the forward saves (flash-attention style).
//
// Dropout draws the same Philox bits as the unfused path: element (b, h, i, j) of the
// probability matrix is dropped exactly when dropout_forward(p, seed, offset) would drop element
// e = ((b·H + h)·T + i)·T + j of a contiguous [B, H, T, T] tensor, so the fused and the unfused
// encoder layer (and a CPU and a GPU backend) drop the same elements for the same key.
//
// Views: q, k, v, ctx and their gradients are [B, H, T, d] with the last dimension contiguous and
// the other strides free — the per-head views of a [B·T, H·d] activation the encoder layer uses
// (strides T·H·d, d, H·d, 1), so no head split or merge is copied.
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class FusedAttention {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.fused_attention";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// True when attention_forward/backward serve heads of `head_dim` over up to `max_seq` keys and
  /// this backend recommends them over the unfused ops for such a model (blocks ask once, at
  /// setup). A backend may implement the ops for every shape and still answer false (the CPU
  /// backend's reference implementation does unless its `fused_attention` option is set).
  virtual bool fused_attention(int64_t head_dim, int64_t max_seq) const = 0;

  /// OVERWRITE ctx and lse. q, k, v, ctx: [B, H, T, d], one dtype, f32|bf16|f16 (math in f32,
  /// ctx rounded once); key_mask: f32 [B, T] additive (0 / kMaskedKey, from additive_key_mask) or
  /// absent; lse: f32 [B, H, T] contiguous, lse[b, h, i] = log Σ_j exp(s[i, j]) (saved for
  /// backward). 0 ≤ p < 1; p = 0 applies no dropout (seed and offset unused).
  virtual void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                                 float scale, float p, uint64_t seed, uint64_t offset, const Tensor& ctx,
                                 const Tensor& lse) = 0;

  /// Gradients of attention_forward, dq, dk, dv OVERWRITE. d_ctx: [B, H, T, d] f32 or q's dtype;
  /// q, k, v, ctx, lse, key_mask, scale, p, seed, offset: exactly as the forward saw them (ctx
  /// its output); dq, dk, dv: f32 [B, H, T, d] views. delta: f32 [B, H, T] contiguous scratch
  /// (OVERWRITE, Σ_d d_ctx·ctx per row). Results are deterministic (no float atomics).
  virtual void attention_backward(const Tensor& d_ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& ctx, const Tensor& lse, const Tensor& key_mask, float scale,
                                  float p, uint64_t seed, uint64_t offset, const Tensor& dq, const Tensor& dk,
                                  const Tensor& dv, const Tensor& delta) = 0;
 protected:
  ~FusedAttention() = default;
};

LOOM_SDK_NAMESPACE_END
