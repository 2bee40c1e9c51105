// GatedGelu: the GeGLU of a gated feed-forward layer (Shazeer 2020; ModernBERT's MLP), a named
// interface (interfaces.hpp). The layer's first linear map writes [N, 2I]; its first half is the
// input a, its second the gate g (Hugging Face: `input, gate = Wi(x).chunk(2, dim=-1)`), and
//   y = gelu(a) ⊙ g                                  (forward)
//   da = dy ⊙ g ⊙ gelu'(a),  dg = dy ⊙ gelu(a)       (backward)
// with the GELU form of backend.hpp's Gelu (erf = Hugging Face "gelu", tanh = "gelu_pytorch_tanh").
#pragma once

#include <cstdint>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class GatedGelu {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.gated_gelu";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// OVERWRITE y = gelu(x[:, :I]) ⊙ x[:, I:]. x: [N, 2I] f32|bf16|f16, contiguous; y: [N, I]
  /// contiguous, f32 or x's dtype (math in f32, rounded once).
  virtual void gated_gelu_forward(const Tensor& x, const Tensor& y, Gelu variant) = 0;
  /// OVERWRITE dx = [dy ⊙ g ⊙ gelu'(a), dy ⊙ gelu(a)] where a, g are the halves of the forward's x.
  /// dy: f32 [N, I]; x: the forward input; dx: f32 [N, 2I]; all contiguous; dx must not overlap
  /// x or dy.
  virtual void gated_gelu_backward(const Tensor& dy, const Tensor& x, const Tensor& dx, Gelu variant) = 0;

 protected:
  ~GatedGelu() = default;
};

LOOM_SDK_NAMESPACE_END
