// FlatOptimizer: what every optimizer over the flat buffers shares — the options every optimizer
// takes (lr, weight_decay, no_decay, max_grad_norm, threads), the segment table, the named state
// tensors, the successful-step counter and the deterministic norms. Subclasses add their update.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/plugin.hpp"

#include "block_runner.hpp"
#include "segment_table.hpp"

namespace loom_optim {

/// Per-optimizer defaults of the shared options (they differ between the reference optimizers).
struct SharedDefaults {
  double lr;
  double weight_decay;
  double max_grad_norm;
};

class FlatOptimizer : public loom::Optimizer {
 public:
  FlatOptimizer(loom::ComponentContext& context, const SharedDefaults& defaults,
                std::vector<const char*> state_names);

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

 protected:
  /// Throws unless `setup()` ran and the step's inputs are usable.
  void check_step(const float* params, const float* grads, const loom::OptimizerStepArgs& args) const;
  /// Throws when the gradient norm is not finite (the precision policy should have skipped).
  /// `weights_changed`: the norm came out of the update pass itself, so the weights are damaged.
  void check_finite_norm(double grad_norm, bool weights_changed = false) const;
  /// The divisor of torch's clip_grad_norm_ (and the reference's SQuAD GradientClipper):
  /// (N + 1e-6) / max_grad_norm when that exceeds 1, else 1; 1 when clipping is off.
  double clip_grad_norm_divisor(double grad_norm) const;
  /// Σ block_sums_ → unscaled global norm.
  double norm_from_block_sums(double grad_scale) const;
  /// Fills `block_sums_[b]` = Σ x² over block b, in parallel.
  void block_sums_of_squares(const float* data) const;
  /// Σ of block_sums_ over all blocks, in block order.
  double total_of_block_sums() const;

  /// Replaces the state tensor names given to the constructor; only before `setup()`.
  void set_state_names(std::vector<const char*> names) { state_names_ = std::move(names); }
  float* state(size_t index) { return state_[index].data(); }
  const SegmentTable& table() const { return table_; }
  const BlockRunner& runner() const { return runner_; }
  double weight_decay() const { return weight_decay_; }
  double max_grad_norm() const { return max_grad_norm_; }
  /// The weight decay applied to segment `index` (0 for no-decay segments).
  float segment_weight_decay(size_t index) const;

  /// Scratch: one double per work block (mutable: the const norms use it too).
  mutable std::vector<double> block_sums_;
  uint64_t steps_ = 0;

 private:
  double lr_;
  double weight_decay_;
  double max_grad_norm_;
  std::vector<std::string> no_decay_;
  BlockRunner runner_;
  std::vector<const char*> state_names_;
  std::vector<std::vector<float>> state_;
  SegmentTable table_;
  bool ready_ = false;
};

/// Reads a β option: a number in [0, 1).
double read_beta(loom::Options& options, const char* key, double fallback);
/// Reads `eps`: a number in (0, 1].
double read_eps(loom::Options& options, double fallback);

}  // namespace loom_optim
