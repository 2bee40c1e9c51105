// The global gradient norm every optimizer reports and clips by, and the gradient multiplier that
// follows: Σ g² of the raw (still loss-scaled) gradients per work block, N = √(Σ g²)·grad_scale,
// the clip divisor c of the optimizer's rule, and ĝ = g·f32(grad_scale / c).
#pragma once

#include <cmath>
#include <vector>

#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom_optimizer/lane_sums.hpp"
#include "loom_optimizer/work_blocks.hpp"

namespace loom_optimizer {

/// block_sums[b] = Σ x² over block b (one pass over x); returns their total in block order.
template <typename ForEachBlock>
double sum_squares_by_block(const ForEachBlock& for_each_block, const std::vector<WorkBlock>& blocks,
                            const float* x, std::vector<double>& block_sums) {
  for_each_block(blocks.size(), [&](size_t b) {
    block_sums[b] = sum_of_squares(x + blocks[b].begin, blocks[b].end - blocks[b].begin);
  });
  return total_in_block_order(block_sums);
}

/// The unscaled global norm N from Σ g² of the raw gradients.
inline double unscaled_norm(double grad_sum_squares, double grad_scale) {
  return std::sqrt(grad_sum_squares) * grad_scale;
}

/// The clip divisor c of `rule` for norm N.
inline double clip_divisor(loom::ClipRule rule, double grad_norm, double max_grad_norm) {
  switch (rule) {
    case loom::ClipRule::above_max:
      // NVIDIA's LAMB: pre-normalise only when the norm exceeds the maximum.
      return max_grad_norm > 0 && grad_norm > max_grad_norm ? grad_norm / max_grad_norm : 1.0;
    case loom::ClipRule::torch_rule: {
      // torch's clip_grad_norm_ (and the reference's SQuAD GradientClipper).
      if (max_grad_norm <= 0) return 1.0;
      const double divisor = (grad_norm + 1e-6) / max_grad_norm;
      return divisor > 1.0 ? divisor : 1.0;
    }
    case loom::ClipRule::none:
      break;
  }
  return 1.0;
}

/// The f32 multiplier every raw gradient gets: grad_scale / c, rounded once.
inline float gradient_multiplier(double grad_scale, double divisor) {
  return static_cast<float>(grad_scale / divisor);
}

}  // namespace loom_optimizer
