// backend/cpu's OptimizerSteps (loom/sdk/ops/optimizer_steps.hpp): the optimizer passes of
// libs/optimizer-passes over CPU memory — the very code the host optimizers of plugins/optimizers
// run, in the same block order, so this family is their bit-for-bit twin and the reference the
// GPU family is tested against. Blocks run on the backend's OpenMP threads; each block is one
// thread's, so results do not depend on the thread count.
//
// With a working copy set (OptimizerWorkingCopy), each block's weights are cast into it by the
// thread that updated them, right after their last write of the step — cast's element loop over
// 128 KiB of weights still in cache, instead of a second pass over the whole buffer.
//
// Compiled apart from the other ops (CMakeLists.txt: loom_backend_cpu_optimizer_steps) because it
// takes the passes' flags (no FMA contraction), which the other ops must not get.
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/optimizer_contract.hpp"
#include "loom_optimizer/adam_passes.hpp"
#include "loom_optimizer/gradient_norm.hpp"
#include "loom_optimizer/sgd_pass.hpp"

namespace loom_cpu {
namespace {

using loom_backend::check_flat_buffer;

class CpuOptimizerPlan final : public loom::OptimizerPlan {
 public:
  CpuOptimizerPlan(std::vector<loom::OptimizerSegment> table, size_t total_elements)
      : segments(std::move(table)), blocks(loom_optimizer::cut_into_blocks(segments)), total(total_elements) {
    grad_sums.assign(blocks.size(), 0.0);
    lamb.resize(blocks.size(), segments.size());
  }
  ~CpuOptimizerPlan() = default;

  std::vector<loom::OptimizerSegment> segments;
  std::vector<loom_optimizer::WorkBlock> blocks;
  size_t total;
  std::vector<double> grad_sums;  // per block, Σ g² of the last gradient_norm
  loom_optimizer::LambScratch lamb;
  double grad_sum_squares = 0;  // of the last gradient_norm
  bool norm_pending = false;    // a gradient_norm no update has used yet
  loom::OptimizerStepReport report{0.0, 0.0};
  loom::Tensor working;  // the 16-bit working copy the updates write (undefined: none)
};

CpuOptimizerPlan& cpu_plan(loom::OptimizerPlan& plan) {
  return static_cast<CpuOptimizerPlan&>(plan);
}

float* floats(const loom::Tensor& t) {
  return static_cast<float*>(t.data);
}

/// The passes' for_each_block on `threads` OpenMP threads (one thread for small buffers).
auto blocks_on_threads(int threads, size_t total) {
  return
      [threads, parallel = total >= static_cast<size_t>(kParallelMinElements)](size_t count, const auto& fn) {
        const auto n = static_cast<int64_t>(count);
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel && n > 1)
        for (int64_t b = 0; b < n; ++b) fn(static_cast<size_t>(b));
      };
}

/// The passes' weights_final hook: a finished block's weights cast into the plan's working copy,
/// nothing without one.
auto working_copy_writer(const CpuOptimizerPlan& plan, const loom::Tensor& params) {
  return [w = floats(params), working = plan.working](size_t begin, size_t end) {
    if (!working.defined()) return;
    const auto first = static_cast<int64_t>(begin), last = static_cast<int64_t>(end);
    if (working.dtype == loom::DType::bf16)
      convert_range(w, static_cast<loom::BFloat16*>(working.data), first, last);
    else
      convert_range(w, static_cast<loom::Half*>(working.data), first, last);
  };
}

/// What every update does first: the views, the scalars, a pending norm. Returns the clip divisor
/// and N, or false when Σ g² is not finite (the step then changes nothing).
bool begin_update(const loom_backend::ArgumentChecks& check, CpuOptimizerPlan& plan,
                  const loom::GradientScaling& scaling, double lr, double& grad_norm, double& divisor) {
  loom_backend::check_update_scalars(check, scaling, lr);
  check.require(plan.norm_pending, "no gradient_norm of these gradients since the last update");
  plan.norm_pending = false;
  grad_norm = loom_optimizer::unscaled_norm(plan.grad_sum_squares, scaling.grad_scale);
  divisor = loom_optimizer::clip_divisor(scaling.clip, grad_norm, scaling.max_grad_norm);
  plan.report = {grad_norm, divisor};
  return std::isfinite(grad_norm);
}

}  // namespace

loom::OptimizerPlan* CpuBackend::create_plan(const loom::OptimizerSegment* segments, size_t count,
                                             size_t total_elements) {
  const auto check = checks("create_plan");
  return new CpuOptimizerPlan(
      loom_backend::checked_optimizer_segments(check, segments, count, total_elements), total_elements);
}

void CpuBackend::destroy_plan(loom::OptimizerPlan* plan) {
  delete static_cast<CpuOptimizerPlan*>(plan);
}

void CpuBackend::gradient_norm(loom::OptimizerPlan& plan_ref, const loom::Tensor& grads,
                               const loom::Tensor& nonfinite_flag) {
  const auto check = checks("gradient_norm");
  CpuOptimizerPlan& plan = cpu_plan(plan_ref);
  check_flat_buffer(check, "grads", grads, plan.total);
  loom_backend::check_nonfinite_flag(check, nonfinite_flag);
  plan.grad_sum_squares = loom_optimizer::sum_squares_by_block(blocks_on_threads(threads_, plan.total),
                                                               plan.blocks, floats(grads), plan.grad_sums);
  *static_cast<int32_t*>(nonfinite_flag.data) = std::isfinite(plan.grad_sum_squares) ? 0 : 1;
  plan.norm_pending = true;
}

void CpuBackend::adamw_step(loom::OptimizerPlan& plan_ref, const loom::Tensor& params,
                            const loom::Tensor& grads, const loom::Tensor& exp_avg,
                            const loom::Tensor& exp_avg_sq, const loom::GradientScaling& scaling,
                            const loom::AdamConstants& constants, double lr) {
  const auto check = checks("adamw_step");
  CpuOptimizerPlan& plan = cpu_plan(plan_ref);
  loom_backend::check_adam_buffers(check, plan.total, params, grads, exp_avg, exp_avg_sq, plan.working);
  double grad_norm = 0, divisor = 1;
  if (!begin_update(check, plan, scaling, lr, grad_norm, divisor)) return;
  loom_optimizer::adamw_pass<false>(blocks_on_threads(threads_, plan.total), plan.segments, plan.blocks,
                                    {floats(params), floats(grads), floats(exp_avg), floats(exp_avg_sq)},
                                    constants,
                                    loom_optimizer::gradient_multiplier(scaling.grad_scale, divisor),
                                    static_cast<float>(lr), plan.grad_sums, working_copy_writer(plan, params));
}

void CpuBackend::lamb_step(loom::OptimizerPlan& plan_ref, const loom::Tensor& params,
                           const loom::Tensor& grads, const loom::Tensor& exp_avg,
                           const loom::Tensor& exp_avg_sq, const loom::GradientScaling& scaling,
                           const loom::AdamConstants& constants, double lr) {
  const auto check = checks("lamb_step");
  CpuOptimizerPlan& plan = cpu_plan(plan_ref);
  loom_backend::check_adam_buffers(check, plan.total, params, grads, exp_avg, exp_avg_sq, plan.working);
  double grad_norm = 0, divisor = 1;
  if (!begin_update(check, plan, scaling, lr, grad_norm, divisor)) return;
  loom_optimizer::lamb_passes(blocks_on_threads(threads_, plan.total), plan.segments, plan.blocks,
                              {floats(params), floats(grads), floats(exp_avg), floats(exp_avg_sq)}, constants,
                              loom_optimizer::gradient_multiplier(scaling.grad_scale, divisor), lr,
                              plan.lamb, working_copy_writer(plan, params));
}

void CpuBackend::sgd_step(loom::OptimizerPlan& plan_ref, const loom::Tensor& params,
                          const loom::Tensor& grads, const loom::Tensor& momentum_buffer,
                          const loom::GradientScaling& scaling, const loom::SgdConstants& constants,
                          double lr) {
  const auto check = checks("sgd_step");
  CpuOptimizerPlan& plan = cpu_plan(plan_ref);
  loom_backend::check_sgd_buffers(check, plan.total, params, grads, momentum_buffer, plan.working);
  const bool momentum = momentum_buffer.defined();
  double grad_norm = 0, divisor = 1;
  if (!begin_update(check, plan, scaling, lr, grad_norm, divisor)) return;
  loom_optimizer::sgd_pass<false>(blocks_on_threads(threads_, plan.total), plan.segments, plan.blocks,
                                  floats(params), floats(grads), momentum ? floats(momentum_buffer) : nullptr,
                                  constants, loom_optimizer::gradient_multiplier(scaling.grad_scale, divisor),
                                  static_cast<float>(lr), plan.grad_sums, working_copy_writer(plan, params));
}

loom::OptimizerStepReport CpuBackend::read_report(const loom::OptimizerPlan& plan) {
  return static_cast<const CpuOptimizerPlan&>(plan).report;
}

void CpuBackend::set_working_copy(loom::OptimizerPlan& plan_ref, const loom::Tensor& working) {
  const auto check = checks("set_working_copy");
  CpuOptimizerPlan& plan = cpu_plan(plan_ref);
  loom_backend::check_working_copy(check, working, plan.total);
  plan.working = working.defined() ? working : loom::Tensor{};
}

}  // namespace loom_cpu
