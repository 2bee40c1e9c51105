// The Adam-family passes over the flat buffers: AdamW in one pass, NVIDIA's LAMB in two
// (docs/decisions/nvlamb.md, docs/reference.md §2.1 and §2.5). Per element, in f32:
//   ĝ = g·grad_mul;  m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ·ĝ
//   u = (m / bias_correction1) / (√(v / bias_correction2) + eps) + weight_decay·w
//   AdamW: w = w − lr·u
//   LAMB:  stage 1 accumulates Σ w² and Σ u² per block (w before the update) in f64; per segment
//          r = f32(lr·‖w‖/‖u‖) when it uses a trust ratio and both norms are nonzero, else f32(lr);
//          stage 2 recomputes u from the new moments and sets w = w − r·u. A segment without trust
//          ratio is finished in stage 1 with w = w − f32(lr)·u.
// Gradients are never written. Blocks run through the caller's for_each_block (work_blocks.hpp);
// the caller's weights_final hook runs after the last write of each block's weights: AdamW's one
// pass, LAMB's stage 2 for trust-ratio segments and stage 1 for the others.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom_optimizer/lane_sums.hpp"
#include "loom_optimizer/work_blocks.hpp"

namespace loom_optimizer {

/// The flat buffers of an Adam-family step.
struct AdamBuffers {
  float* w;        ///< master weights, updated
  const float* g;  ///< raw gradients, read
  float* m;        ///< exp_avg, updated
  float* v;        ///< exp_avg_sq, updated
};

/// The f32 constants of Adam-family step t (1-based: successful steps + 1), from the f64 options.
inline loom::AdamConstants adam_constants(double beta1, double beta2, double eps, bool bias_correction,
                                          uint64_t t) {
  const double step = static_cast<double>(t);
  loom::AdamConstants c{};
  c.beta1 = static_cast<float>(beta1);
  c.one_minus_beta1 = static_cast<float>(1.0 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1.0 - beta2);
  c.bias_correction1 = bias_correction ? static_cast<float>(1.0 - std::pow(beta1, step)) : 1.0f;
  c.bias_correction2 = bias_correction ? static_cast<float>(1.0 - std::pow(beta2, step)) : 1.0f;
  c.eps = static_cast<float>(eps);
  return c;
}

/// What one block's element loop needs (the step's constants and its segment's decay).
struct AdamBlockConstants {
  float grad_mul;
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias_correction1, bias_correction2;
  float eps;
  float weight_decay;
};

inline AdamBlockConstants block_constants(const loom::AdamConstants& c, float grad_mul, float weight_decay) {
  return {grad_mul,           c.beta1, c.one_minus_beta1, c.beta2, c.one_minus_beta2, c.bias_correction1,
          c.bias_correction2, c.eps,   weight_decay};
}

/// One element's new moments (m, v) from its raw gradient g and its moments before the step.
struct Moments {
  float m, v;
};
inline Moments new_moments(float g, float m, float v, const AdamBlockConstants& c) {
  const float gk = g * c.grad_mul;
  return {c.beta1 * m + c.one_minus_beta1 * gk, c.beta2 * v + c.one_minus_beta2 * gk * gk};
}

/// u of one element from its new moments.
inline float update_direction(float m, float v, float w, const AdamBlockConstants& c) {
  return (m / c.bias_correction1) / (std::sqrt(v / c.bias_correction2) + c.eps) + c.weight_decay * w;
}

// The block loops below take their buffers as __restrict parameters and are never inlined: GCC
// honours restrict on the parameters of the function it compiles, and loses it when the function
// is inlined into its caller — every store to m, v or w could then alias the next element's loads,
// and the loops keep their constants and lane sums in memory (measured 30–60% slower).

/// AdamW over one block of n elements; returns Σ g² of the raw gradients when kSumGradients.
template <bool kSumGradients>
[[gnu::noinline]] double adamw_block(const float* __restrict g, float* __restrict m, float* __restrict v,
                                     float* __restrict w, size_t n, const AdamBlockConstants& c, float lr) {
  LaneSums grad_squares;
  auto element = [&](size_t k, size_t lane) {
    if constexpr (kSumGradients) {
      const double raw = g[k];
      grad_squares.lane[lane] += raw * raw;
    }
    const auto [mk, vk] = new_moments(g[k], m[k], v[k], c);
    m[k] = mk;
    v[k] = vk;
    w[k] -= lr * update_direction(mk, vk, w[k], c);
  };
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) element(i + j, j);
  for (size_t i = whole; i < n; ++i) element(i, i - whole);
  return grad_squares.total();
}

/// AdamW over every block. With kSumGradients, block_sums[b] = Σ g² of block b and the return
/// value is their total in block order (the global norm comes out of the update pass); else 0.
template <bool kSumGradients, typename ForEachBlock, typename WeightsFinal = NoWeightsFinalHook>
double adamw_pass(const ForEachBlock& for_each_block, const std::vector<loom::OptimizerSegment>& segments,
                  const std::vector<WorkBlock>& blocks, const AdamBuffers& buffers,
                  const loom::AdamConstants& constants, float grad_mul, float lr,
                  std::vector<double>& block_sums, const WeightsFinal& weights_final = {}) {
  for_each_block(blocks.size(), [&](size_t i) {
    const WorkBlock& block = blocks[i];
    const AdamBlockConstants c = block_constants(constants, grad_mul, segments[block.segment].weight_decay);
    const size_t at = block.begin;
    const double sum = adamw_block<kSumGradients>(buffers.g + at, buffers.m + at, buffers.v + at,
                                                  buffers.w + at, block.end - at, c, lr);
    weights_final(block.begin, block.end);
    if constexpr (kSumGradients)
      block_sums[i] = sum;
    else
      (void)sum;
  });
  return kSumGradients ? total_in_block_order(block_sums) : 0.0;
}

/// LAMB's scratch: per block Σ w², Σ u²; per segment their totals and the stage-2 step size.
struct LambScratch {
  std::vector<double> weight_sums, update_sums;      // per block
  std::vector<double> weight_totals, update_totals;  // per segment
  std::vector<float> step_sizes;                     // per segment

  void resize(size_t blocks, size_t segments) {
    weight_sums.assign(blocks, 0.0), update_sums.assign(blocks, 0.0);
    weight_totals.assign(segments, 0.0), update_totals.assign(segments, 0.0);
    step_sizes.assign(segments, 0.0f);
  }
};

/// Stage 1 of one block of a trust-ratio segment: moments, and Σ w², Σ u² (w before the update).
[[gnu::noinline]] inline void lamb_moments_block(const float* __restrict g, float* __restrict m,
                                                 float* __restrict v, const float* __restrict w, size_t n,
                                                 const AdamBlockConstants& c, double& weight_sum,
                                                 double& update_sum) {
  LaneSums weights, updates;
  auto element = [&](size_t k, size_t lane) {
    const auto [mk, vk] = new_moments(g[k], m[k], v[k], c);
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

/// Stage 1 of one block of a segment without trust ratio: moments and the update with the plain lr.
[[gnu::noinline]] inline void lamb_moments_and_weights_block(const float* __restrict g, float* __restrict m,
                                                             float* __restrict v, float* __restrict w,
                                                             size_t n, const AdamBlockConstants& c,
                                                             float lr) {
  for (size_t k = 0; k < n; ++k) {
    const auto [mk, vk] = new_moments(g[k], m[k], v[k], c);
    m[k] = mk;
    v[k] = vk;
    w[k] -= lr * update_direction(mk, vk, w[k], c);
  }
}

/// Stage 2 of one block: w −= r·u with u recomputed from the stage-1 moments.
[[gnu::noinline]] inline void lamb_trust_ratio_block(const float* __restrict m, const float* __restrict v,
                                                     float* __restrict w, size_t n,
                                                     const AdamBlockConstants& c, float step_size) {
  for (size_t k = 0; k < n; ++k) w[k] -= step_size * update_direction(m[k], v[k], w[k], c);
}

/// A segment's stage-2 step size from its Σ w² and Σ u².
inline float lamb_step_size(bool trust_ratio, double weight_sum_squares, double update_sum_squares,
                            double lr) {
  const double w_norm = std::sqrt(weight_sum_squares), u_norm = std::sqrt(update_sum_squares);
  if (trust_ratio && w_norm != 0.0 && u_norm != 0.0) return static_cast<float>(lr * (w_norm / u_norm));
  return static_cast<float>(lr);
}

/// The whole LAMB update (stage 1, step sizes, stage 2); `scratch` sized for blocks and segments.
template <typename ForEachBlock, typename WeightsFinal = NoWeightsFinalHook>
void lamb_passes(const ForEachBlock& for_each_block, const std::vector<loom::OptimizerSegment>& segments,
                 const std::vector<WorkBlock>& blocks, const AdamBuffers& buffers,
                 const loom::AdamConstants& constants, float grad_mul, double lr, LambScratch& scratch,
                 const WeightsFinal& weights_final = {}) {
  const float plain_lr = static_cast<float>(lr);
  for_each_block(blocks.size(), [&](size_t i) {
    const WorkBlock& block = blocks[i];
    const loom::OptimizerSegment& segment = segments[block.segment];
    const AdamBlockConstants c = block_constants(constants, grad_mul, segment.weight_decay);
    const size_t n = block.end - block.begin;
    const size_t at = block.begin;
    if (segment.trust_ratio != 0) {
      lamb_moments_block(buffers.g + at, buffers.m + at, buffers.v + at, buffers.w + at, n, c,
                         scratch.weight_sums[i], scratch.update_sums[i]);
    } else {
      lamb_moments_and_weights_block(buffers.g + at, buffers.m + at, buffers.v + at, buffers.w + at, n, c,
                                     plain_lr);
      weights_final(block.begin, block.end);
      scratch.weight_sums[i] = scratch.update_sums[i] = 0.0;
    }
  });
  segment_totals(blocks, scratch.weight_sums, scratch.weight_totals);
  segment_totals(blocks, scratch.update_sums, scratch.update_totals);
  for (size_t s = 0; s < segments.size(); ++s)
    scratch.step_sizes[s] =
        lamb_step_size(segments[s].trust_ratio != 0, scratch.weight_totals[s], scratch.update_totals[s], lr);
  for_each_block(blocks.size(), [&](size_t i) {
    const WorkBlock& block = blocks[i];
    const loom::OptimizerSegment& segment = segments[block.segment];
    if (segment.trust_ratio == 0) return;
    const AdamBlockConstants c = block_constants(constants, grad_mul, segment.weight_decay);
    const size_t at = block.begin;
    lamb_trust_ratio_block(buffers.m + at, buffers.v + at, buffers.w + at, block.end - at, c,
                           scratch.step_sizes[block.segment]);
    weights_final(block.begin, block.end);
  });
}

}  // namespace loom_optimizer
