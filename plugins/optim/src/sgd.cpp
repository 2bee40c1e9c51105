// optimizer/sgd: one SGD step in one pass (torch.optim.SGD):
//   ĝ = g·grad_scale / c (+ wd·w on decayed segments; coupled L2 decay, as torch)
//   with momentum μ > 0: b = ĝ on the first step, else b = μ·b + (1−dampening)·ĝ;
//                        d = ĝ + μ·b (nesterov) or d = b
//   w = w − lr·d
// Clipping (max_grad_norm > 0) uses torch's clip_grad_norm_ divisor (N + 1e-6) / max_grad_norm.
#include "sgd.hpp"

#include <cmath>

#include "lane_sums.hpp"

namespace loom_optim {
namespace {

struct SgdConstants {
  float grad_mul;
  float weight_decay;
  float momentum;
  float keep;  // 1 − dampening
  float lr;
};

// One block; returns Σ g² of the raw gradients. `first`: the momentum buffer starts as ĝ.
template <bool kMomentum, bool kNesterov>
double sgd_block(const float* __restrict g, float* __restrict buffer, float* __restrict w, size_t n,
                 const SgdConstants& c, bool first) {
  LaneSums grad_squares;
  auto element = [&](size_t k, size_t lane) {
    const double raw = g[k];
    grad_squares.lane[lane] += raw * raw;
    float d = g[k] * c.grad_mul + c.weight_decay * w[k];
    if constexpr (kMomentum) {
      const float b = first ? d : c.momentum * buffer[k] + c.keep * d;
      buffer[k] = b;
      d = kNesterov ? d + c.momentum * b : b;
    }
    w[k] -= c.lr * d;
  };
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) element(i + j, j);
  for (size_t i = whole; i < n; ++i) element(i, i - whole);
  return grad_squares.total();
}

}  // namespace

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

loom::OptimizerStepResult Sgd::step(float* params, const float* grads, const loom::OptimizerStepArgs& args) {
  check_step(params, grads, args);
  const SegmentTable& segments = table();
  const auto& blocks = segments.blocks();

  double divisor = 1.0;
  if (max_grad_norm() > 0) {
    const double grad_norm = global_norm(grads, args.grad_scale);
    check_finite_norm(grad_norm);
    divisor = clip_grad_norm_divisor(grad_norm);
  }

  SgdConstants c{};
  c.grad_mul = static_cast<float>(args.grad_scale / divisor);
  c.momentum = static_cast<float>(momentum_);
  c.keep = static_cast<float>(1.0 - dampening_);
  c.lr = static_cast<float>(args.lr);
  const bool first = steps_ == 0;
  float* buffer = num_state_tensors() > 0 ? state(0) : nullptr;

  runner().run(blocks.size(), segments.total_elements(), [&](size_t b) {
    const WorkBlock& block = blocks[b];
    SgdConstants local = c;
    local.weight_decay = segment_weight_decay(block.segment);
    const size_t at = block.begin, n = block.end - at;
    float* buf = buffer != nullptr ? buffer + at : nullptr;
    if (momentum_ == 0.0)
      block_sums_[b] = sgd_block<false, false>(grads + at, buf, params + at, n, local, first);
    else if (nesterov_)
      block_sums_[b] = sgd_block<true, true>(grads + at, buf, params + at, n, local, first);
    else
      block_sums_[b] = sgd_block<true, false>(grads + at, buf, params + at, n, local, first);
  });
  const double grad_norm = norm_from_block_sums(args.grad_scale);
  check_finite_norm(grad_norm, /*weights_changed=*/true);

  ++steps_;
  return {grad_norm, divisor, steps_};
}

}  // namespace loom_optim
