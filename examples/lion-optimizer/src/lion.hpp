// optimizer/lion: Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023) over
// Loom's flat fp32 parameter buffer. Per element, with g the (unscaled, clipped) gradient:
//   c = β1·m + (1 − β1)·g
//   w = w − lr·(sign(c) + λ·w)        (λ only on decayed segments; decoupled, as in the paper)
//   m = β2·m + (1 − β2)·g
// One state tensor, "exp_avg" (m). Single-threaded and element-wise, so deterministic.
#pragma once

#include <string>
#include <vector>

#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom_lion {

class Lion final : public loom::Optimizer {
 public:
  explicit Lion(loom::ComponentContext& context);

  double base_lr() const override { return lr_; }
  void setup(const loom::ParameterSegment* segments, size_t count, size_t total_elements) override;
  size_t num_segments() const override { return segments_.size(); }
  bool segment_decays(size_t index) const override;
  double global_norm(const float* grads, double grad_scale) const override;
  void segment_norms(const float* data, double* norms) const override;
  loom::OptimizerStepResult step(float* params, const float* grads, const loom::OptimizerStepArgs& args) override;
  uint64_t successful_steps() const override { return steps_; }
  void set_successful_steps(uint64_t steps) override { steps_ = steps; }
  size_t num_state_tensors() const override { return 1; }
  loom::OptimizerStateTensor state_tensor(size_t index) override;
  void reset_state() override;

 private:
  struct Segment {
    std::string name;
    size_t offset;
    size_t count;
    bool decays;
  };
  double sum_of_squares(const float* data, const Segment& segment) const;
  void require_setup(const char* what) const;

  double lr_, beta1_, beta2_, weight_decay_, max_grad_norm_;
  std::vector<std::string> no_decay_;
  std::vector<Segment> segments_;
  std::vector<float> exp_avg_;
  uint64_t steps_ = 0;
  bool ready_ = false;
};

}  // namespace loom_lion
