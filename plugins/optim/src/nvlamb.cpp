// optimizer/nvlamb: one LAMB step over the flat buffers, as DeepLearningExamples' fused LAMB does it
// (docs/reference.md §2.1):
//   N = ‖g‖·grad_scale over all segments; c = N / max_grad_norm if N > max_grad_norm else 1
//   t = successful_steps + 1
//   ĝ = g·grad_scale / c;  m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ²
//   u = (m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + eps) + wd·w        (bias correction optional)
//   per segment: r = lr·‖w‖/‖u‖ when (wd ≠ 0 or trust_ratio_on_no_decay) and both norms ≠ 0, else lr
//   w = w − r·u
// Passes: the global norm (read g), stage 1 (read g m v w, write m v, Σw² Σu² per block), stage 2
// for trust-ratio segments only (read m v w, recompute u, write w). Segments without a trust ratio
// are finished in stage 1. Gradients are never written.
#include "nvlamb.hpp"

#include <cmath>

#include "lane_sums.hpp"

namespace loom_optim {
namespace {

// The per-step constants of the element-wise update, in the fp32 the reference computes in.
struct LambConstants {
  float grad_mul;  // grad_scale / c
  float beta1, beta3, beta2, one_minus_beta2;
  float bias_correction1, bias_correction2;  // 1 − β^t, or 1 without bias correction
  float eps;
  float weight_decay;
};

inline float update_direction(float m, float v, float w, const LambConstants& c) {
  return (m / c.bias_correction1) / (std::sqrt(v / c.bias_correction2) + c.eps) + c.weight_decay * w;
}

// Stage 1: moments, and Σw², Σu² of the block (w before the update).
void update_moments(const float* __restrict g, float* __restrict m, float* __restrict v,
                    const float* __restrict w, size_t n, const LambConstants& c, double& weight_sum,
                    double& update_sum) {
  LaneSums weights, updates;
  auto element = [&](size_t k, size_t lane) {
    const float gk = g[k] * c.grad_mul;
    const float mk = c.beta1 * m[k] + c.beta3 * gk;
    const float vk = c.beta2 * v[k] + c.one_minus_beta2 * gk * gk;
    m[k] = mk;
    v[k] = vk;
    const double u = update_direction(mk, vk, w[k], c);
    const double wk = w[k];
    weights.lane[lane] += wk * wk;
    updates.lane[lane] += u * u;
  };
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) element(i + j, j);
  for (size_t i = whole; i < n; ++i) element(i, i - whole);
  weight_sum = weights.total();
  update_sum = updates.total();
}

// Stage 1 for a segment without trust ratio: moments and the update with the plain lr, one pass.
void update_moments_and_weights(const float* __restrict g, float* __restrict m, float* __restrict v,
                                float* __restrict w, size_t n, const LambConstants& c, float lr) {
  for (size_t k = 0; k < n; ++k) {
    const float gk = g[k] * c.grad_mul;
    const float mk = c.beta1 * m[k] + c.beta3 * gk;
    const float vk = c.beta2 * v[k] + c.one_minus_beta2 * gk * gk;
    m[k] = mk;
    v[k] = vk;
    w[k] -= lr * update_direction(mk, vk, w[k], c);
  }
}

// Stage 2: w −= r·u with u recomputed from the stage-1 moments.
void apply_trust_ratio(const float* __restrict m, const float* __restrict v, float* __restrict w, size_t n,
                       const LambConstants& c, float step_size) {
  for (size_t k = 0; k < n; ++k) w[k] -= step_size * update_direction(m[k], v[k], w[k], c);
}

}  // namespace

NvLamb::NvLamb(loom::ComponentContext& context)
    : FlatOptimizer(context, SharedDefaults{1e-3, 0.01, 1.0}, {"exp_avg", "exp_avg_sq"}) {
  loom::Options& options = context.options();
  beta1_ = read_beta(options, "beta1", 0.9);
  beta2_ = read_beta(options, "beta2", 0.999);
  eps_ = read_eps(options, 1e-6);
  bias_correction_ = options.get<bool>("bias_correction", true);
  trust_ratio_on_no_decay_ = options.get<bool>("trust_ratio_on_no_decay", false);
}

loom::OptimizerStepResult NvLamb::step(float* params, const float* grads,
                                       const loom::OptimizerStepArgs& args) {
  check_step(params, grads, args);
  const SegmentTable& segments = table();
  const auto& blocks = segments.blocks();

  const double grad_norm = global_norm(grads, args.grad_scale);
  check_finite_norm(grad_norm);
  const double divisor =
      max_grad_norm() > 0 && grad_norm > max_grad_norm() ? grad_norm / max_grad_norm() : 1.0;

  const double t = static_cast<double>(steps_ + 1);
  LambConstants c{};
  c.grad_mul = static_cast<float>(args.grad_scale / divisor);
  c.beta1 = static_cast<float>(beta1_);
  c.beta3 = static_cast<float>(1.0 - beta1_);
  c.beta2 = static_cast<float>(beta2_);
  c.one_minus_beta2 = static_cast<float>(1.0 - beta2_);
  c.bias_correction1 = bias_correction_ ? static_cast<float>(1.0 - std::pow(beta1_, t)) : 1.0f;
  c.bias_correction2 = bias_correction_ ? static_cast<float>(1.0 - std::pow(beta2_, t)) : 1.0f;
  c.eps = static_cast<float>(eps_);
  const float lr = static_cast<float>(args.lr);

  uses_trust_ratio_.assign(segments.size(), 0);
  for (size_t s = 0; s < segments.size(); ++s)
    uses_trust_ratio_[s] = trust_ratio_on_no_decay_ || segment_weight_decay(s) != 0.0f;

  float* m = state(0);
  float* v = state(1);
  weight_sums_.assign(blocks.size(), 0.0);
  update_sums_.assign(blocks.size(), 0.0);
  runner().run(blocks.size(), segments.total_elements(), [&](size_t b) {
    const WorkBlock& block = blocks[b];
    LambConstants local = c;
    local.weight_decay = segment_weight_decay(block.segment);
    const size_t at = block.begin, n = block.end - block.begin;
    if (uses_trust_ratio_[block.segment])
      update_moments(grads + at, m + at, v + at, params + at, n, local, weight_sums_[b], update_sums_[b]);
    else
      update_moments_and_weights(grads + at, m + at, v + at, params + at, n, local, lr);
  });

  // Per-segment norms, block partials combined in block order.
  std::vector<double> weight_norms(segments.size(), 0.0), update_norms(segments.size(), 0.0);
  for (size_t b = 0; b < blocks.size(); ++b) {
    weight_norms[blocks[b].segment] += weight_sums_[b];
    update_norms[blocks[b].segment] += update_sums_[b];
  }
  step_sizes_.assign(segments.size(), lr);
  for (size_t s = 0; s < segments.size(); ++s) {
    const double w_norm = std::sqrt(weight_norms[s]), u_norm = std::sqrt(update_norms[s]);
    if (uses_trust_ratio_[s] && w_norm != 0.0 && u_norm != 0.0)
      step_sizes_[s] = static_cast<float>(args.lr * (w_norm / u_norm));
  }

  runner().run(blocks.size(), segments.total_elements(), [&](size_t b) {
    const WorkBlock& block = blocks[b];
    if (!uses_trust_ratio_[block.segment]) return;
    LambConstants local = c;
    local.weight_decay = segment_weight_decay(block.segment);
    const size_t at = block.begin;
    apply_trust_ratio(m + at, v + at, params + at, block.end - at, local, step_sizes_[block.segment]);
  });

  ++steps_;
  return {grad_norm, divisor, steps_};
}

}  // namespace loom_optim
