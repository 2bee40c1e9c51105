// WindowedAttention: the fused attention op family (fused_attention.hpp) with a sliding-window
// band — ModernBERT's local layers, Longformer's and BigBird's windows — a named interface
// (interfaces.hpp). With `window` = w ≥ 0, query i attends to key j only when |i − j| ≤ w (and the
// key mask allows it); w < 0 (or w ≥ T − 1) is the full attention of FusedAttention. A pair outside
// the band scores exactly kMaskedKey (not added to the key mask: Hugging Face combines its boolean
// masks before it makes them additive), so it takes no part in a row that has any allowed key, and
// a row with none (a padding query whose band holds only padding) is uniform over all T keys, as
// Hugging Face's eager attention makes it. Such rows are padding; no loss reads them.
//
// Everything else — views, dtypes, dropout's Philox elements, lse and delta — is FusedAttention's
// contract; a backend that offers both computes the same bits through either when w < 0.
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class WindowedAttention {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.windowed_attention";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// FusedAttention::attention_forward restricted to the band |i − j| ≤ window.
  virtual void windowed_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const Tensor& key_mask, float scale, int64_t window, float p,
                                          uint64_t seed, uint64_t offset, const Tensor& ctx,
                                          const Tensor& lse) = 0;

  /// FusedAttention::attention_backward restricted to the band |i − j| ≤ window.
  virtual void windowed_attention_backward(const Tensor& d_ctx, const Tensor& q, const Tensor& k,
                                           const Tensor& v, const Tensor& ctx, const Tensor& lse,
                                           const Tensor& key_mask, float scale, int64_t window, float p,
                                           uint64_t seed, uint64_t offset, const Tensor& dq, const Tensor& dk,
                                           const Tensor& dv, const Tensor& delta) = 0;

 protected:
  ~WindowedAttention() = default;
};

LOOM_SDK_NAMESPACE_END
