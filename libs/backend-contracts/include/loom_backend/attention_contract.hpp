// The argument contract of fused attention (loom/sdk/ops/fused_attention.hpp) and of its windowed
// form (loom/sdk/ops/windowed_attention.hpp), checked the same way by every backend before it
// touches memory, and the key band of a window, which every backend computes the same way.
#pragma once

#include <algorithm>
#include <string>

#include "loom/sdk/tensor.hpp"
#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

/// Extents of an attention call: q, k, v, ctx and their gradients are [batch, heads, seq, head_dim].
struct AttentionDims {
  int64_t batch, heads, seq, head_dim;
};

/// `t` is a [B, H, T, d] head view on the backend's device with the extents `n` and a unit last
/// stride (the other strides are free).
inline void check_head_view(const ArgumentChecks& check, const char* name, const loom::Tensor& t,
                            const AttentionDims& n) {
  check.on_device(name, t);
  check.shape(name, t, {n.batch, n.heads, n.seq, n.head_dim});
  check.require(n.head_dim <= 1 || t.strides[3] == 1,
                std::string(name) + " " + t.describe() + " must have stride 1 in its last dimension");
}

/// q, k, v, key_mask, lse and p, shared by forward and backward; returns the extents.
inline AttentionDims check_attention_inputs(const ArgumentChecks& check, const loom::Tensor& q,
                                            const loom::Tensor& k, const loom::Tensor& v,
                                            const loom::Tensor& key_mask, const loom::Tensor& lse, float p) {
  check.require(q.ndim == 4, "q " + q.describe() + " must be [B, H, T, d]");
  check.dtype("q", q, {loom::DType::f32, loom::DType::bf16, loom::DType::f16});
  const AttentionDims n{q.shape[0], q.shape[1], q.shape[2], q.shape[3]};
  check_head_view(check, "q", q, n);
  check_head_view(check, "k", k, n);
  check_head_view(check, "v", v, n);
  check.require(k.dtype == q.dtype && v.dtype == q.dtype, "q, k and v must share one dtype");
  if (check.optional("key_mask", key_mask, {loom::DType::f32}))
    check.shape("key_mask", key_mask, {n.batch, n.seq});
  check.tensor("lse", lse, {loom::DType::f32});
  check.shape("lse", lse, {n.batch, n.heads, n.seq});
  check.require(p >= 0.0f && p < 1.0f, "dropout probability " + std::to_string(p) + " is outside [0, 1)");
  return n;
}

/// attention_forward's arguments.
inline AttentionDims check_attention_forward(const ArgumentChecks& check, const loom::Tensor& q,
                                             const loom::Tensor& k, const loom::Tensor& v,
                                             const loom::Tensor& key_mask, float p, const loom::Tensor& ctx,
                                             const loom::Tensor& lse) {
  const AttentionDims n = check_attention_inputs(check, q, k, v, key_mask, lse, p);
  check_head_view(check, "ctx", ctx, n);
  check.require(ctx.dtype == q.dtype, "ctx " + ctx.describe() + " must have q's dtype");
  return n;
}

/// attention_backward's arguments.
inline AttentionDims check_attention_backward(const ArgumentChecks& check, const loom::Tensor& d_ctx,
                                              const loom::Tensor& q, const loom::Tensor& k,
                                              const loom::Tensor& v, const loom::Tensor& ctx,
                                              const loom::Tensor& lse, const loom::Tensor& key_mask, float p,
                                              const loom::Tensor& dq, const loom::Tensor& dk,
                                              const loom::Tensor& dv, const loom::Tensor& delta) {
  const AttentionDims n = check_attention_forward(check, q, k, v, key_mask, p, ctx, lse);
  check_head_view(check, "d_ctx", d_ctx, n);
  check.require(d_ctx.dtype == loom::DType::f32 || d_ctx.dtype == q.dtype,
                "d_ctx " + d_ctx.describe() + " must be f32 or q's dtype");
  check_head_view(check, "dq", dq, n);
  check.dtype("dq", dq, {loom::DType::f32});
  check_head_view(check, "dk", dk, n);
  check.dtype("dk", dk, {loom::DType::f32});
  check_head_view(check, "dv", dv, n);
  check.dtype("dv", dv, {loom::DType::f32});
  check.tensor("delta", delta, {loom::DType::f32});
  check.shape("delta", delta, {n.batch, n.heads, n.seq});
  return n;
}

/// windowed_attention_forward's arguments: attention_forward's; every window is valid (< 0: no band).
inline AttentionDims check_windowed_attention_forward(const ArgumentChecks& check, const loom::Tensor& q,
                                                      const loom::Tensor& k, const loom::Tensor& v,
                                                      const loom::Tensor& key_mask, int64_t /*window*/,
                                                      float p, const loom::Tensor& ctx,
                                                      const loom::Tensor& lse) {
  return check_attention_forward(check, q, k, v, key_mask, p, ctx, lse);
}

/// windowed_attention_backward's arguments: attention_backward's; every window is valid.
inline AttentionDims check_windowed_attention_backward(const ArgumentChecks& check, const loom::Tensor& d_ctx,
                                                       const loom::Tensor& q, const loom::Tensor& k,
                                                       const loom::Tensor& v, const loom::Tensor& ctx,
                                                       const loom::Tensor& lse, const loom::Tensor& key_mask,
                                                       int64_t /*window*/, float p, const loom::Tensor& dq,
                                                       const loom::Tensor& dk, const loom::Tensor& dv,
                                                       const loom::Tensor& delta) {
  return check_attention_backward(check, d_ctx, q, k, v, ctx, lse, key_mask, p, dq, dk, dv, delta);
}

/// The window a backend computes with: −1 where the band |i − j| ≤ window holds every key of a
/// sequence of `seq` (window < 0 or ≥ seq − 1), which is FusedAttention's case and takes its path
/// (the same bits); else `window`.
inline int64_t effective_window(int64_t window, int64_t seq) {
  return window < 0 || window >= seq - 1 ? -1 : window;
}

/// The keys [first, last] query i may attend to under an effective window (−1: all `seq`).
struct KeyBand {
  int64_t first, last;
};
inline KeyBand key_band(int64_t i, int64_t window, int64_t seq) {
  if (window < 0) return {0, seq - 1};
  return {std::max<int64_t>(0, i - window), std::min<int64_t>(seq - 1, i + window)};
}

}  // namespace loom_backend
