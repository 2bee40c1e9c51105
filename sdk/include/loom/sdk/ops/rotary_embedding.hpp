// RotaryEmbedding: rotary position embeddings (RoFormer; the "rotate_half" layout of GPT-NeoX,
// Llama and ModernBERT), a named interface (interfaces.hpp) an encoder with rotary positions asks
// for at setup.
//
// For a head vector x of even width d at position t, with f_i = theta^(-2i/d) for i < d/2:
//   y[i]       = x[i]·cos(t·f_i) − x[i + d/2]·sin(t·f_i)
//   y[i + d/2] = x[i + d/2]·cos(t·f_i) + x[i]·sin(t·f_i)
// i.e. Hugging Face's q·cos + rotate_half(q)·sin with cos/sin = cat(freqs, freqs). The rotation is
// orthogonal, so the gradient of y = R_t·x is dx = R_tᵀ·dy: the same op with `inverse` set (the
// angle negated). Angles are computed in double precision and their cosine and sine rounded to f32,
// so every backend rotates by the same f32 factors; the products are summed in f32.
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class RotaryEmbedding {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.rotary_embedding";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// OVERWRITE y = R_t·x (or R_tᵀ·x when `inverse`) for every b, h, t. x, y: [B, H, T, d] views of one
  /// dtype (f32|bf16|f16; math in f32, rounded once), last dimension contiguous, other strides free
  /// (the per-head views of a fused [B·T, 3·H·d] QKV activation), d even; y may be x (in place) but
  /// must not otherwise overlap it. The position of row t is t. theta > 0.
  virtual void rotary_apply(const Tensor& x, const Tensor& y, double theta, bool inverse) = 0;

 protected:
  ~RotaryEmbedding() = default;
};

LOOM_SDK_NAMESPACE_END
