// The SGD pass over the flat buffers (torch.optim.SGD), per element in f32:
//   d = g·grad_mul + weight_decay·w            (coupled L2 decay, as torch)
//   with momentum μ > 0: b = d on the first step, else b = μ·b + keep·d (keep = 1 − dampening);
//                        d = d + μ·b (Nesterov) or d = b
//   w = w − lr·d
// Gradients are never written. Blocks run through the caller's for_each_block (work_blocks.hpp);
// the caller's weights_final hook runs after each block's update.
#pragma once

#include <vector>

#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom_optimizer/lane_sums.hpp"
#include "loom_optimizer/work_blocks.hpp"

namespace loom_optimizer {

struct SgdBlockConstants {
  float grad_mul;
  float weight_decay;
  float momentum;
  float keep;
  float lr;
};

/// One block; returns Σ g² of the raw gradients when kSumGradients. `first`: the momentum buffer
/// starts as d. Never inlined, so GCC keeps its __restrict parameters (adam_passes.hpp says why).
template <bool kMomentum, bool kNesterov, bool kSumGradients>
[[gnu::noinline]] double sgd_block(const float* __restrict g, float* __restrict buffer, float* __restrict w,
                                   size_t n, const SgdBlockConstants& c, bool first) {
  LaneSums grad_squares;
  auto element = [&](size_t k, size_t lane) {
    if constexpr (kSumGradients) {
      const double raw = g[k];
      grad_squares.lane[lane] += raw * raw;
    }
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

/// SGD over every block (`buffer` null without momentum). With kSumGradients, block_sums[b] =
/// Σ g² of block b and the return value is their total in block order; else 0.
template <bool kSumGradients, typename ForEachBlock, typename WeightsFinal = NoWeightsFinalHook>
double sgd_pass(const ForEachBlock& for_each_block, const std::vector<loom::OptimizerSegment>& segments,
                const std::vector<WorkBlock>& blocks, float* w, const float* g, float* buffer,
                const loom::SgdConstants& constants, float grad_mul, float lr,
                std::vector<double>& block_sums, const WeightsFinal& weights_final = {}) {
  const bool first = constants.first_step != 0;
  const bool momentum = buffer != nullptr;  // the optimizer has a buffer only with momentum
  for_each_block(blocks.size(), [&](size_t i) {
    const WorkBlock& block = blocks[i];
    const SgdBlockConstants c{grad_mul, segments[block.segment].weight_decay, constants.momentum,
                              constants.keep, lr};
    const size_t at = block.begin, n = block.end - at;
    float* buf = momentum ? buffer + at : nullptr;
    const double sum = !momentum ? sgd_block<false, false, kSumGradients>(g + at, buf, w + at, n, c, first)
                       : constants.nesterov != 0
                           ? sgd_block<true, true, kSumGradients>(g + at, buf, w + at, n, c, first)
                           : sgd_block<true, false, kSumGradients>(g + at, buf, w + at, n, c, first);
    weights_final(block.begin, block.end);
    if constexpr (kSumGradients)
      block_sums[i] = sum;
    else
      (void)sum;
  });
  return kSumGradients ? total_in_block_order(block_sums) : 0.0;
}

}  // namespace loom_optimizer
