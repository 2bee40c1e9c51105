// optimizer/adamw: one AdamW step in one pass over the flat buffers (apex FusedAdam, adam_w_mode=1,
// which the reference fine-tuning uses; docs/reference.md §2.5):
//   N = ‖g‖·grad_scale; with max_grad_norm > 0: c = (N + 1e-6) / max_grad_norm if > 1 else 1
//   t = successful_steps + 1;  ĝ = g·grad_scale / c
//   m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ²
//   w = w − lr·((m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + eps) + wd·w)   (1−β^t → 1 without bias correction)
// Without clipping, the norm is accumulated in the same pass (reported, not needed beforehand).
#include "adamw.hpp"

#include <cmath>

#include "lane_sums.hpp"

namespace loom_optim {
namespace {

struct AdamConstants {
  float grad_mul;
  float beta1, beta3, beta2, one_minus_beta2;
  float bias_correction1, bias_correction2;
  float eps;
  float weight_decay;
  float lr;
};

// One block: the update, returning Σ g² of the raw (still scaled) gradients.
double adamw_block(const float* __restrict g, float* __restrict m, float* __restrict v, float* __restrict w,
                   size_t n, const AdamConstants& c) {
  LaneSums grad_squares;
  auto element = [&](size_t k, size_t lane) {
    const double raw = g[k];
    grad_squares.lane[lane] += raw * raw;
    const float gk = g[k] * c.grad_mul;
    const float mk = c.beta1 * m[k] + c.beta3 * gk;
    const float vk = c.beta2 * v[k] + c.one_minus_beta2 * gk * gk;
    m[k] = mk;
    v[k] = vk;
    const float u =
        (mk / c.bias_correction1) / (std::sqrt(vk / c.bias_correction2) + c.eps) + c.weight_decay * w[k];
    w[k] -= c.lr * u;
  };
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) element(i + j, j);
  for (size_t i = whole; i < n; ++i) element(i, i - whole);
  return grad_squares.total();
}

}  // namespace

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
  const SegmentTable& segments = table();
  const auto& blocks = segments.blocks();

  double divisor = 1.0;
  if (max_grad_norm() > 0) {
    const double grad_norm = global_norm(grads, args.grad_scale);
    check_finite_norm(grad_norm);
    divisor = clip_grad_norm_divisor(grad_norm);
  }

  const double t = static_cast<double>(steps_ + 1);
  AdamConstants c{};
  c.grad_mul = static_cast<float>(args.grad_scale / divisor);
  c.beta1 = static_cast<float>(beta1_);
  c.beta3 = static_cast<float>(1.0 - beta1_);
  c.beta2 = static_cast<float>(beta2_);
  c.one_minus_beta2 = static_cast<float>(1.0 - beta2_);
  c.bias_correction1 = bias_correction_ ? static_cast<float>(1.0 - std::pow(beta1_, t)) : 1.0f;
  c.bias_correction2 = bias_correction_ ? static_cast<float>(1.0 - std::pow(beta2_, t)) : 1.0f;
  c.eps = static_cast<float>(eps_);
  c.lr = static_cast<float>(args.lr);

  float* m = state(0);
  float* v = state(1);
  runner().run(blocks.size(), segments.total_elements(), [&](size_t b) {
    const WorkBlock& block = blocks[b];
    AdamConstants local = c;
    local.weight_decay = segment_weight_decay(block.segment);
    const size_t at = block.begin;
    block_sums_[b] = adamw_block(grads + at, m + at, v + at, params + at, block.end - at, local);
  });
  const double grad_norm = norm_from_block_sums(args.grad_scale);
  check_finite_norm(grad_norm, /*weights_changed=*/true);

  ++steps_;
  return {grad_norm, divisor, steps_};
}

}  // namespace loom_optim
