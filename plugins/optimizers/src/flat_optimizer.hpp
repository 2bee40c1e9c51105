// FlatOptimizer: what every optimizer over the flat buffers shares — the options every optimizer
// takes (lr, weight_decay, no_decay, max_grad_norm, threads), the segment table and the work
// blocks of its passes (libs/optimizer-passes), the named state tensors, the successful-step
// counter and the deterministic norms — and the backend path (BackendOptimizer): after attach()
// the state lives in backend memory and steps run as the backend's OptimizerSteps passes, which
// also write the 16-bit working copy when the host hands one (BackendOptimizerWorkingCopy).
// Subclasses add their update, once for host buffers (step) and once for the backend
// (step_on_backend), both from the same passes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/backend_optimizer.hpp"
#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_optimizer/work_blocks.hpp"

#include "block_runner.hpp"
#include "segment_table.hpp"

namespace loom_optim {

/// Per-optimizer defaults of the shared options (they differ between the reference optimizers).
struct SharedDefaults {
  double lr;
  double weight_decay;
  double max_grad_norm;
};

class FlatOptimizer : public loom::Optimizer,
                      public loom::BackendOptimizer,
                      public loom::BackendOptimizerWorkingCopy {
 public:
  FlatOptimizer(loom::ComponentContext& context, const SharedDefaults& defaults,
                std::vector<const char*> state_names);
  ~FlatOptimizer() override;

  double base_lr() const override { return lr_; }
  void setup(const loom::ParameterSegment* segments, size_t count, size_t total_elements) override;
  size_t num_segments() const override { return table_.size(); }
  bool segment_decays(size_t index) const override;
  double global_norm(const float* grads, double grad_scale) const override;
  void segment_norms(const float* data, double* norms) const override;
  uint64_t successful_steps() const override { return steps_; }
  void set_successful_steps(uint64_t steps) override { steps_ = steps; }
  size_t num_state_tensors() const override { return state_names_.size(); }
  loom::OptimizerStateTensor state_tensor(size_t index) override;
  void reset_state() override;

  // BackendOptimizer (backend_optimizer.hpp); step_on_backend is each optimizer's own.
  void attach(loom::Backend& backend, loom::OptimizerSteps& steps) override;
  void inspect_gradients(const loom::Tensor& grads, const loom::Tensor& nonfinite_flag) override;
  loom::OptimizerStepResult read_last_result() override;
  loom::BackendStateTensor backend_state(size_t index) override;
  // BackendOptimizerWorkingCopy: the copy goes to the plan, whose passes write it.
  void write_working_copy(loom::OptimizerWorkingCopy& copy, const loom::Tensor& working) override;

 protected:
  /// Throws unless `setup()` ran, the optimizer is on the host and the step's inputs are usable.
  void check_step(const float* params, const float* grads, const loom::OptimizerStepArgs& args) const;
  /// Throws unless attach() ran and inspect_gradients() since the last update, or on bad args.
  /// Marks the gradients as consumed.
  void check_backend_step(const loom::OptimizerStepArgs& args);
  /// Throws when the gradient norm is not finite (the precision policy should have skipped).
  /// `weights_changed`: the norm came out of the update pass itself, so the weights are damaged.
  void check_finite_norm(double grad_norm, bool weights_changed = false) const;
  /// The step's gradient scaling on a backend: clipping by `rule` when max_grad_norm > 0, else none.
  loom::GradientScaling clipped_scaling(double grad_scale, loom::ClipRule rule) const;
  /// Before a host pass that sums Σ g² on its way: the clip divisor under `rule` from a norm pass
  /// of its own when clipping is on (checked finite), else 1.
  double host_clip_divisor(const float* grads, double grad_scale, loom::ClipRule rule) const;
  /// After such a pass, whose Σ g² is `total`: the norm checked (the weights have changed), the step
  /// counted, and its result.
  loom::OptimizerStepResult finish_host_pass(double total, double grad_scale, double divisor);
  /// Σ x² per work block into block_sums_ (in parallel); returns the total in block order.
  double sum_squares_by_block(const float* x) const;

  /// The backend's passes and the plan of this segment table; valid after attach().
  loom::OptimizerSteps& passes() const { return *passes_; }
  loom::OptimizerPlan& plan() const { return *plan_; }
  /// State tensor `index` as a view of backend memory (after attach()).
  const loom::Tensor& backend_tensor(size_t index) const { return backend_views_[index]; }

  /// Replaces the state tensor names given to the constructor; only before `setup()`.
  void set_state_names(std::vector<const char*> names) { state_names_ = std::move(names); }
  /// Which segments get LAMB's trust ratio (OptimizerSegment::trust_ratio).
  enum class TrustRatio { none, decayed_segments, every_segment };
  /// Sets the trust-ratio rule (none unless called); only before `setup()`.
  void set_trust_ratio(TrustRatio rule) { trust_ratio_ = rule; }
  float* state(size_t index) { return state_[index].data(); }
  const SegmentTable& table() const { return table_; }
  /// The segments as the passes see them (weight decay, trust ratio) and their work blocks.
  const std::vector<loom::OptimizerSegment>& pass_segments() const { return pass_segments_; }
  const std::vector<loom_optimizer::WorkBlock>& blocks() const { return blocks_; }
  /// Runs fn(block) for every block on the optimizer's threads (the passes' for_each_block).
  auto for_each_block() const {
    return [this](size_t count, const auto& fn) { runner_.run(count, table_.total_elements(), fn); };
  }
  double max_grad_norm() const { return max_grad_norm_; }

  /// Scratch: one double per work block (mutable: the const norms use it too).
  mutable std::vector<double> block_sums_;
  uint64_t steps_ = 0;

 private:
  double lr_;
  double weight_decay_;
  double max_grad_norm_;
  TrustRatio trust_ratio_ = TrustRatio::none;
  std::vector<std::string> no_decay_;
  BlockRunner runner_;
  std::vector<const char*> state_names_;
  std::vector<std::vector<float>> state_;
  SegmentTable table_;
  std::vector<loom::OptimizerSegment> pass_segments_;
  std::vector<loom_optimizer::WorkBlock> blocks_;
  bool ready_ = false;
  // The backend path (attach()).
  loom::Backend* backend_ = nullptr;
  loom::OptimizerSteps* passes_ = nullptr;
  loom::OptimizerPlan* plan_ = nullptr;
  std::vector<loom::Buffer> backend_state_;
  std::vector<loom::Tensor> backend_views_;
  bool gradients_inspected_ = false;
};

/// Reads a β option: a number in [0, 1).
double read_beta(loom::Options& options, const char* key, double fallback);
/// Reads `eps`: a number in (0, 1].
double read_eps(loom::Options& options, double fallback);

}  // namespace loom_optim
