// VocabularyDecoder: the masked-LM decoder GEMMs of a head whose decoder shares the word
// embeddings, logits = z·Eᵀ (+ bias), into logit rows padded to Vp = vocab rounded up to 8 (aligned
// rows; padding columns never computed nor read, docs/decisions/vocab-padding.md).
// Where the backend's GEMMs want their extents a multiple of m (GemmExtentAlignment: 8 for 16-bit
// operands on backend/cuda) the GEMMs run over the first V − V mod m classes and then the remaining
// V mod m in a small GEMM each; no GEMM reads or writes past the weight, its gradient or the
// class columns.
#pragma once

#include <cstdint>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"
#include "loom/sdk/ops/gemm_extent_alignment.hpp"
#include "loom/sdk/ops/linear_bias.hpp"

namespace loom_blocks {

class VocabularyDecoder {
 public:
  void setup(const loom::BlockSetup& setup, int64_t vocab) {
    vocab_ = vocab;
    const auto* alignment = loom::find_backend_interface<loom::GemmExtentAlignment>(setup);
    const int64_t multiple = alignment != nullptr ? alignment->gemm_extent_multiple(setup.compute_dtype) : 1;
    aligned_ = multiple > 1 && vocab > multiple ? vocab - vocab % multiple : vocab;
  }

  /// The class columns [M, V] of padded logits [M, Vp].
  loom::Tensor class_columns(const loom::Tensor& logits) const { return logits.narrow(1, 0, vocab_); }

  /// logits (f32 [M, Vp]) class columns = z_c·weightᵀ (+ bias, f32 [V], when defined).
  void forward(loom::Backend& be, const loom::Tensor& z_c, const loom::Tensor& weight, const loom::Tensor& bias,
               loom::LinearBias* linear_bias, const loom::Tensor& logits) const {
    const loom::Tensor columns = class_columns(logits);
    const bool fused = bias.defined() && linear_bias != nullptr;
    if (bias.defined() && !fused) be.copy(broadcast_rows(bias, logits.shape[0]), columns);
    for_parts([&](int64_t at, int64_t n) {
      const loom::Tensor w = weight.narrow(0, at, n), part = columns.narrow(1, at, n);
      if (fused)
        linear_bias->linear_bias_forward(z_c, w, bias.narrow(0, at, n), part, loom::Tensor{});
      else
        be.gemm(z_c, false, w, true, part, 1.0f, bias.defined() ? 1.0f : 0.0f);
    });
  }

  /// From d_logits (f32 [M, Vp], the loss's gradient): d_bias += Σ rows (when defined; `ones` is f32
  /// [1, M] scratch), d_weight += dᵀ·z_c, d_z = d·weight (f32 [M, H], OVERWRITE). `d_logits_c` is
  /// d_logits' compute-dtype copy buffer in 16-bit compute, absent in f32.
  void backward(loom::Backend& be, const loom::Tensor& d_logits, const loom::Tensor& d_logits_c,
                const loom::Tensor& ones, const loom::Tensor& z_c, const loom::Tensor& weight,
                const loom::Tensor& d_weight, const loom::Tensor& d_bias, const loom::Tensor& d_z) const {
    const loom::Tensor columns = class_columns(d_logits);
    if (d_bias.defined()) {
      be.fill(ones, 1.0);
      be.gemm(ones, false, columns, false, d_bias.reshape({1, vocab_}), 1.0f, 1.0f);
    }
    loom::Tensor operand = columns;
    if (d_logits_c.defined()) {
      be.cast(d_logits, d_logits_c);
      operand = class_columns(d_logits_c);
    }
    for_parts([&](int64_t at, int64_t n) {
      const loom::Tensor part = operand.narrow(1, at, n);
      be.gemm(part, true, z_c, false, d_weight.narrow(0, at, n), 1.0f, 1.0f);
      be.gemm(part, false, weight.narrow(0, at, n), false, d_z, 1.0f, at == 0 ? 0.0f : 1.0f);
    });
  }

 private:
  template <typename F>
  void for_parts(F&& f) const {
    f(int64_t{0}, aligned_);
    if (aligned_ < vocab_) f(aligned_, vocab_ - aligned_);
  }
  /// bias [V] seen as [M, V] with row stride 0.
  static loom::Tensor broadcast_rows(const loom::Tensor& bias, int64_t rows) {
    loom::Tensor t = bias;
    t.ndim = 2;
    t.shape[0] = rows;
    t.shape[1] = bias.shape[0];
    t.strides[0] = 0;
    t.strides[1] = 1;
    return t;
  }

  int64_t vocab_ = 0, aligned_ = 0;
};

}  // namespace loom_blocks
