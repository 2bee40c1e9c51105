// optimizer/sgd: stochastic gradient descent with optional momentum (heavy ball or Nesterov),
// dampening, L2 weight decay and global gradient clipping — torch.optim.SGD semantics.
#pragma once

#include "flat_optimizer.hpp"

namespace loom_optim {

class Sgd final : public FlatOptimizer {
 public:
  explicit Sgd(loom::ComponentContext& context);
  loom::OptimizerStepResult step(float* params, const float* grads,
                                 const loom::OptimizerStepArgs& args) override;
  void step_on_backend(const loom::Tensor& params, const loom::Tensor& grads,
                       const loom::OptimizerStepArgs& args) override;

 private:
  /// The f32 constants of the step about to be taken.
  loom::SgdConstants constants() const;

  double momentum_;
  double dampening_;
  bool nesterov_;
};

}  // namespace loom_optim
