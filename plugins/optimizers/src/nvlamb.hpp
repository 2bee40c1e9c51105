// optimizer/nvlamb: LAMB as NVIDIA's BERT code runs it (docs/decisions/nvlamb.md has the exact
// formulas and the choices behind them).
#pragma once

#include "loom_optimizer/adam_passes.hpp"

#include "flat_optimizer.hpp"

namespace loom_optim {

class NvLamb final : public FlatOptimizer {
 public:
  explicit NvLamb(loom::ComponentContext& context);
  loom::OptimizerStepResult step(float* params, const float* grads,
                                 const loom::OptimizerStepArgs& args) override;
  void step_on_backend(const loom::Tensor& params, const loom::Tensor& grads,
                       const loom::OptimizerStepArgs& args) override;

 private:
  /// The f32 constants of the step about to be taken (t = successful_steps + 1).
  loom::AdamConstants constants() const;

  double beta1_;
  double beta2_;
  double eps_;
  bool bias_correction_;
  loom_optimizer::LambScratch scratch_;
};

}  // namespace loom_optim
