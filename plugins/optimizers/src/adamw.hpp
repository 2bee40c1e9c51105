// optimizer/adamw: fused AdamW with decoupled weight decay (apex FusedAdam, adam_w_mode), optional
// bias correction and optional global gradient clipping.
#pragma once

#include "flat_optimizer.hpp"

namespace loom_optim {

class AdamW final : public FlatOptimizer {
 public:
  explicit AdamW(loom::ComponentContext& context);
  loom::OptimizerStepResult step(float* params, const float* grads,
                                 const loom::OptimizerStepArgs& args) override;
  void step_on_backend(const loom::Tensor& params, const loom::Tensor& grads,
                       const loom::OptimizerStepArgs& args) override;

 private:
  double beta1_;
  double beta2_;
  double eps_;
  bool bias_correction_;
};

}  // namespace loom_optim
