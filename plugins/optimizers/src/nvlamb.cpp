// optimizer/nvlamb: one LAMB step over the flat buffers, as DeepLearningExamples' fused LAMB does it
// (docs/reference.md §2.1):
//   N = ‖g‖·grad_scale over all segments; c = N / max_grad_norm if N > max_grad_norm else 1
//   t = successful_steps + 1
//   ĝ = g·grad_scale / c;  m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ²
//   u = (m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + eps) + wd·w        (bias correction optional)
//   per segment: r = lr·‖w‖/‖u‖ when (wd ≠ 0 or trust_ratio_on_no_decay) and both norms ≠ 0, else lr
//   w = w − r·u
// Passes (libs/optimizer-passes, adam_passes.hpp): the global norm (read g), stage 1 (read g m v
// w, write m v, Σw² Σu² per block), stage 2 for trust-ratio segments only (read m v w, recompute u,
// write w). Segments without a trust ratio are finished in stage 1. Gradients are never written.
// On the host the passes run here; on a backend, as its OptimizerSteps::lamb_step.
#include "nvlamb.hpp"

#include "loom_optimizer/gradient_norm.hpp"

namespace loom_optim {

NvLamb::NvLamb(loom::ComponentContext& context)
    : FlatOptimizer(context, SharedDefaults{1e-3, 0.01, 1.0}, {"exp_avg", "exp_avg_sq"}) {
  loom::Options& options = context.options();
  beta1_ = read_beta(options, "beta1", 0.9);
  beta2_ = read_beta(options, "beta2", 0.999);
  eps_ = read_eps(options, 1e-6);
  bias_correction_ = options.get<bool>("bias_correction", true);
  set_trust_ratio(options.get<bool>("trust_ratio_on_no_decay", false) ? TrustRatio::every_segment
                                                                      : TrustRatio::decayed_segments);
}

loom::AdamConstants NvLamb::constants() const {
  return loom_optimizer::adam_constants(beta1_, beta2_, eps_, bias_correction_, steps_ + 1);
}

loom::OptimizerStepResult NvLamb::step(float* params, const float* grads,
                                       const loom::OptimizerStepArgs& args) {
  check_step(params, grads, args);
  const double grad_norm = global_norm(grads, args.grad_scale);
  check_finite_norm(grad_norm);
  const double divisor = loom_optimizer::clip_divisor(loom::ClipRule::above_max, grad_norm, max_grad_norm());
  scratch_.resize(blocks().size(), pass_segments().size());
  loom_optimizer::lamb_passes(
      for_each_block(), pass_segments(), blocks(), {params, grads, state(0), state(1)}, constants(),
      loom_optimizer::gradient_multiplier(args.grad_scale, divisor), args.lr, scratch_);
  ++steps_;
  return {grad_norm, divisor, steps_};
}

void NvLamb::step_on_backend(const loom::Tensor& params, const loom::Tensor& grads,
                             const loom::OptimizerStepArgs& args) {
  check_backend_step(args);
  passes().lamb_step(plan(), params, grads, backend_tensor(0), backend_tensor(1), clipped_scaling(args.grad_scale, loom::ClipRule::above_max),
                     constants(), args.lr);
  ++steps_;
}

}  // namespace loom_optim
