// FlatOptimizer: shared options, setup, state tensors and deterministic norms. See flat_optimizer.hpp.
#include "flat_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lane_sums.hpp"

namespace loom_optim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double read_non_negative(loom::Options& options, const char* key, double fallback) {
  const double value = options.get<double>(key, fallback, loom::Range{0.0, kInfinity});
  if (!std::isfinite(value)) options.fail(key, "must be a finite number");
  return value;
}

}  // namespace

double read_beta(loom::Options& options, const char* key, double fallback) {
  const double value = options.get<double>(key, fallback, loom::Range{0.0, 1.0});
  if (value >= 1.0) options.fail(key, "must be in [0, 1); 1 would freeze the moment forever");
  return value;
}

double read_eps(loom::Options& options, double fallback) {
  const double value = options.get<double>("eps", fallback, loom::Range{0.0, 1.0});
  if (value <= 0.0)
    options.fail("eps", "must be > 0: with eps = 0 a parameter whose gradients are all zero gets 0/0 = NaN");
  return value;
}

FlatOptimizer::FlatOptimizer(loom::ComponentContext& context, const SharedDefaults& defaults,
                             std::vector<const char*> state_names)
    : state_names_(std::move(state_names)) {
  loom::Options& options = context.options();
  lr_ = read_non_negative(options, "lr", defaults.lr);
  weight_decay_ = read_non_negative(options, "weight_decay", defaults.weight_decay);
  max_grad_norm_ = read_non_negative(options, "max_grad_norm", defaults.max_grad_norm);
  no_decay_ = options.get<std::vector<std::string>>("no_decay", {"bias", "LayerNorm"});
  for (const std::string& pattern : no_decay_)
    if (pattern.empty()) options.fail("no_decay", "an empty pattern would match every parameter");
  runner_ = BlockRunner(static_cast<unsigned>(options.get<int>("threads", 0, loom::Range{0, 1024})));
}

void FlatOptimizer::setup(const loom::ParameterSegment* segments, size_t count, size_t total_elements) {
  if (ready_) throw loom::Error("optimizer setup() called twice");
  table_ = SegmentTable(segments, count, total_elements, no_decay_);
  state_.assign(state_names_.size(), std::vector<float>(total_elements, 0.0f));
  block_sums_.assign(table_.blocks().size(), 0.0);
  ready_ = true;
}

bool FlatOptimizer::segment_decays(size_t index) const {
  if (index >= table_.size())
    throw loom::Error("segment index " + std::to_string(index) + " out of range (" +
                      std::to_string(table_.size()) + " segments)");
  return table_[index].decays;
}

float FlatOptimizer::segment_weight_decay(size_t index) const {
  return table_[index].decays ? static_cast<float>(weight_decay_) : 0.0f;
}

void FlatOptimizer::block_sums_of_squares(const float* data) const {
  const auto& blocks = table_.blocks();
  runner_.run(blocks.size(), table_.total_elements(), [&](size_t b) {
    block_sums_[b] = sum_of_squares(data + blocks[b].begin, blocks[b].end - blocks[b].begin);
  });
}

double FlatOptimizer::total_of_block_sums() const {
  double total = 0.0;
  for (double partial : block_sums_) total += partial;
  return total;
}

double FlatOptimizer::global_norm(const float* grads, double grad_scale) const {
  if (!ready_) throw loom::Error("global_norm() before setup()");
  block_sums_of_squares(grads);
  return norm_from_block_sums(grad_scale);
}

void FlatOptimizer::segment_norms(const float* data, double* norms) const {
  if (!ready_) throw loom::Error("segment_norms() before setup()");
  block_sums_of_squares(data);
  std::fill(norms, norms + table_.size(), 0.0);
  const auto& blocks = table_.blocks();
  for (size_t b = 0; b < blocks.size(); ++b) norms[blocks[b].segment] += block_sums_[b];
  for (size_t s = 0; s < table_.size(); ++s) norms[s] = std::sqrt(norms[s]);
}

loom::OptimizerStateTensor FlatOptimizer::state_tensor(size_t index) {
  if (!ready_) throw loom::Error("state_tensor() before setup()");
  if (index >= state_.size())
    throw loom::Error("state tensor index " + std::to_string(index) + " out of range (" +
                      std::to_string(state_.size()) + " tensors)");
  return {state_names_[index], state_[index].data(), state_[index].size()};
}

void FlatOptimizer::reset_state() {
  for (auto& tensor : state_) std::fill(tensor.begin(), tensor.end(), 0.0f);
  steps_ = 0;
}

void FlatOptimizer::check_step(const float* params, const float* grads,
                               const loom::OptimizerStepArgs& args) const {
  if (!ready_) throw loom::Error("step() before setup()");
  if (table_.total_elements() > 0 && (params == nullptr || grads == nullptr))
    throw loom::Error("step(): parameter or gradient buffer is null");
  if (!std::isfinite(args.lr) || args.lr < 0)
    throw loom::Error("step(): learning rate " + std::to_string(args.lr) + " is not a finite number >= 0");
  if (!std::isfinite(args.grad_scale) || args.grad_scale <= 0)
    throw loom::Error("step(): grad_scale " + std::to_string(args.grad_scale) +
                      " is not a finite number > 0 (it is 1 / the loss scale)");
}

void FlatOptimizer::check_finite_norm(double grad_norm, bool weights_changed) const {
  if (!std::isfinite(grad_norm))
    throw loom::Error("step(): the gradients are not finite (global norm " + std::to_string(grad_norm) +
                      ") at successful step " + std::to_string(steps_) +
                      "; the precision policy must skip such steps — " +
                      (weights_changed ? "the weights are now corrupted, resume from a checkpoint"
                                       : "the weights were left unchanged"));
}

double FlatOptimizer::clip_grad_norm_divisor(double grad_norm) const {
  if (max_grad_norm_ <= 0) return 1.0;
  const double divisor = (grad_norm + 1e-6) / max_grad_norm_;
  return divisor > 1.0 ? divisor : 1.0;
}

double FlatOptimizer::norm_from_block_sums(double grad_scale) const {
  return std::sqrt(total_of_block_sums()) * grad_scale;
}

}  // namespace loom_optim
