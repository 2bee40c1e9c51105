// optimizer/sgd: one SGD step in one pass (torch.optim.SGD):
//   ĝ = g·grad_scale / c (+ wd·w on decayed segments; coupled L2 decay, as torch)
//   with momentum μ > 0: b = ĝ on the first step, else b = μ·b + (1−dampening)·ĝ;
//                        d = ĝ + μ·b (nesterov) or d = b
//   w = w − lr·d
// Clipping (max_grad_norm > 0) uses torch's clip_grad_norm_ divisor (N + 1e-6) / max_grad_norm.
// The pass is libs/optimizer-passes' sgd_pass.hpp, here on host buffers, on a backend as its
// OptimizerSteps::sgd_step.
#include "sgd.hpp"

#include "loom_optimizer/gradient_norm.hpp"
#include "loom_optimizer/sgd_pass.hpp"

namespace loom_optim {

Sgd::Sgd(loom::ComponentContext& context) : FlatOptimizer(context, SharedDefaults{1e-3, 0.0, 0.0}, {}) {
  loom::Options& options = context.options();
  momentum_ = options.get<double>("momentum", 0.0, loom::Range{0.0, 1.0});
  dampening_ = options.get<double>("dampening", 0.0, loom::Range{0.0, 1.0});
  nesterov_ = options.get<bool>("nesterov", false);
  if (momentum_ != 0.0) set_state_names({"momentum_buffer"});
  if (nesterov_ && (momentum_ <= 0.0 || dampening_ != 0.0))
    options.fail("nesterov", "Nesterov momentum needs momentum > 0 and dampening = 0 (momentum = " +
                                 std::to_string(momentum_) + ", dampening = " + std::to_string(dampening_) +
                                 ")");
}

loom::SgdConstants Sgd::constants() const {
  return {static_cast<float>(momentum_), static_cast<float>(1.0 - dampening_), nesterov_ ? 1 : 0,
          steps_ == 0 ? 1 : 0};
}

loom::OptimizerStepResult Sgd::step(float* params, const float* grads, const loom::OptimizerStepArgs& args) {
  check_step(params, grads, args);
  const double divisor = host_clip_divisor(grads, args.grad_scale, loom::ClipRule::torch_rule);
  float* buffer = num_state_tensors() > 0 ? state(0) : nullptr;
  const double total = loom_optimizer::sgd_pass<true>(
      for_each_block(), pass_segments(), blocks(), params, grads, buffer, constants(),
      loom_optimizer::gradient_multiplier(args.grad_scale, divisor), static_cast<float>(args.lr),
      block_sums_);
  return finish_host_pass(total, args.grad_scale, divisor);
}

void Sgd::step_on_backend(const loom::Tensor& params, const loom::Tensor& grads,
                          const loom::OptimizerStepArgs& args) {
  check_backend_step(args);
  passes().sgd_step(plan(), params, grads, num_state_tensors() > 0 ? backend_tensor(0) : loom::Tensor{},
                    clipped_scaling(args.grad_scale, loom::ClipRule::torch_rule), constants(), args.lr);
  ++steps_;
}

}  // namespace loom_optim
