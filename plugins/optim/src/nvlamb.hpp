// optimizer/nvlamb: LAMB as NVIDIA's BERT code runs it (docs/decisions/nvlamb.md has the exact
// formulas and the choices behind them).
#pragma once

#include <vector>

#include "flat_optimizer.hpp"

namespace loom_optim {

class NvLamb final : public FlatOptimizer {
 public:
  explicit NvLamb(loom::ComponentContext& context);
  loom::OptimizerStepResult step(float* params, const float* grads,
                                 const loom::OptimizerStepArgs& args) override;

 private:
  double beta1_;
  double beta2_;
  double eps_;
  bool bias_correction_;
  bool trust_ratio_on_no_decay_;
  // Per work block: Σ w² and Σ u² of stage 1.
  std::vector<double> weight_sums_;
  std::vector<double> update_sums_;
  // Per segment: the step size of stage 2 (lr or lr·‖w‖/‖u‖) and whether stage 2 applies.
  std::vector<float> step_sizes_;
  std::vector<char> uses_trust_ratio_;
};

}  // namespace loom_optim
