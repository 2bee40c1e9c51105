// optimizer/adamw: one AdamW step in one pass over the flat buffers (apex FusedAdam, adam_w_mode=1,
// which the reference fine-tuning uses; docs/reference.md §2.5):
//   N = ‖g‖·grad_scale; with max_grad_norm > 0: c = (N + 1e-6) / max_grad_norm if > 1 else 1
//   t = successful_steps + 1;  ĝ = g·grad_scale / c
//   m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ²
//   w = w − lr·((m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + eps) + wd·w)   (1−β^t → 1 without bias correction)
// Without clipping, the host accumulates the norm in the same pass (reported, not needed
// beforehand); on a backend the norm pass ran before (inspect_gradients) and the update is
// OptimizerSteps::adamw_step. The pass itself is libs/optimizer-passes' adam_passes.hpp.
#include "adamw.hpp"

#include "loom_optimizer/adam_passes.hpp"
#include "loom_optimizer/gradient_norm.hpp"

namespace loom_optim {

AdamW::AdamW(loom::ComponentContext& context)
    : FlatOptimizer(context, SharedDefaults{1e-3, 0.01, 0.0}, {"exp_avg", "exp_avg_sq"}) {
  loom::Options& options = context.options();
  beta1_ = read_beta(options, "beta1", 0.9);
  beta2_ = read_beta(options, "beta2", 0.999);
  eps_ = read_eps(options, 1e-8);
  bias_correction_ = options.get<bool>("bias_correction", false);
}

loom::OptimizerStepResult AdamW::step(float* params, const float* grads,
                                      const loom::OptimizerStepArgs& args) {
  check_step(params, grads, args);
  const double divisor = host_clip_divisor(grads, args.grad_scale, loom::ClipRule::torch_rule);
  const double total = loom_optimizer::adamw_pass<true>(
      for_each_block(), pass_segments(), blocks(), {params, grads, state(0), state(1)},
      loom_optimizer::adam_constants(beta1_, beta2_, eps_, bias_correction_, steps_ + 1),
      loom_optimizer::gradient_multiplier(args.grad_scale, divisor), static_cast<float>(args.lr),
      block_sums_);
  return finish_host_pass(total, args.grad_scale, divisor);
}

void AdamW::step_on_backend(const loom::Tensor& params, const loom::Tensor& grads,
                            const loom::OptimizerStepArgs& args) {
  check_backend_step(args);
  passes().adamw_step(
      plan(), params, grads, backend_tensor(0), backend_tensor(1),
      clipped_scaling(args.grad_scale, loom::ClipRule::torch_rule),
      loom_optimizer::adam_constants(beta1_, beta2_, eps_, bias_correction_, steps_ + 1), args.lr);
  ++steps_;
}

}  // namespace loom_optim
