// PoolerHead: the BERT pooler shared by the pretraining and classifier heads.
//
//   pooled = tanh(h[:, 0, :]·Wpᵀ + bp)        ([CLS] row of every sequence → (B, H))
// Parameters `bert.pooler.dense.weight` / `.bias` (the heads' scope is "", names are complete).
// Backward accumulates the [CLS] rows' gradient straight into the strided rows of d_input.
#pragma once

#include "bert_block.hpp"
#include "loom_blocks/region_carver.hpp"

namespace loom_bert {

class PoolerHead : public BertBlock {
 public:
  loom::BlockRole role() const override { return loom::BlockRole::head; }
  const char* scope() const override { return ""; }
  /// Backward reads the [CLS] rows (and the heads their other rows) from what forward saved.
  bool backward_reads_input() const override { return false; }

 protected:
  using BertBlock::BertBlock;

  struct PoolerSaved {
    loom::Tensor cls, cls_c, pooled, pooled_c;
  };
  PoolerSaved carve_pooler(RegionCarver& r, int64_t B) const {
    const int64_t H = config_.hidden_size;
    PoolerSaved s;
    s.cls = r.take(loom::DType::f32, {B, H});
    s.cls_c = r.take_compute_copy(compute_, {B, H});
    s.pooled = r.take(loom::DType::f32, {B, H});
    s.pooled_c = r.take_compute_copy(compute_, {B, H});
    return s;
  }
  void declare_pooler() {
    const int64_t H = config_.hidden_size;
    pooler_weight_ = params_.weight("bert.pooler.dense.weight", H, H);
    pooler_bias_ = params_.bias("bert.pooler.dense.bias", H);
  }
  /// Fills s.pooled (and s.pooled_c) from the hidden states `input` [B, T, H]. Returns the
  /// compute-dtype pooled tensor.
  loom::Tensor pooler_forward(const loom::Tensor& input, const PoolerSaved& s) const {
    be().copy(input.select(1, 0), s.cls);
    const loom::Tensor cls_c = to_compute(s.cls, s.cls_c);
    linear_forward(cls_c, pooler_weight_, master(pooler_bias_), s.pooled);
    be().tanh_forward(s.pooled, s.pooled);
    return to_compute(s.pooled, s.pooled_c);
  }
  /// d_pooled (f32 [B, H], overwritten) → parameter gradients, and d_input[:, 0, :] += d[CLS].
  /// `d_pooled_c` is a [B, H] buffer in the compute dtype in 16-bit compute.
  void pooler_backward(const loom::Tensor& d_pooled, const loom::Tensor& d_pooled_c, const PoolerSaved& s,
                       const loom::Tensor& d_input) const {
    be().tanh_backward(d_pooled, s.pooled, d_pooled);
    const loom::Tensor cls_c = reduced() ? s.cls_c : s.cls;
    linear_backward(d_pooled, to_compute(d_pooled, d_pooled_c), cls_c, pooler_weight_, grad(pooler_bias_),
                    d_input.select(1, 0), 1.0f);
  }

  size_t pooler_weight_ = 0, pooler_bias_ = 0;
};

}  // namespace loom_bert
