// FlatOptimizer: shared options, setup, state tensors, deterministic norms and the backend path.
// See flat_optimizer.hpp.
#include "flat_optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "loom_optimizer/gradient_norm.hpp"

namespace loom_optim {
namespace {

double read_non_negative(loom::Options& options, const char* key, double fallback) {
  return options.get<double>(key, fallback, loom::Range::at_least(0.0));
}

void check_step_args(const loom::OptimizerStepArgs& args, const char* call) {
  if (!std::isfinite(args.lr) || args.lr < 0)
    throw loom::Error(std::string(call) + ": learning rate " + std::to_string(args.lr) +
                      " is not a finite number >= 0");
  if (!std::isfinite(args.grad_scale) || args.grad_scale <= 0)
    throw loom::Error(std::string(call) + ": grad_scale " + std::to_string(args.grad_scale) +
                      " is not a finite number > 0 (it is 1 / the loss scale)");
}

}  // namespace

// β = 1 would freeze a moment at its first value for ever.
double read_beta(loom::Options& options, const char* key, double fallback) {
  return options.get<double>(key, fallback, loom::Range::closed_open(0.0, 1.0));
}

// eps = 0 gives a parameter whose gradients are all zero the update 0/0 = NaN.
double read_eps(loom::Options& options, double fallback) {
  return options.get<double>("eps", fallback, loom::Range::open_closed(0.0, 1.0));
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

FlatOptimizer::~FlatOptimizer() {
  if (plan_ != nullptr) passes_->destroy_plan(plan_);
}

void FlatOptimizer::setup(const loom::ParameterSegment* segments, size_t count, size_t total_elements) {
  if (ready_) throw loom::Error("optimizer setup() called twice");
  table_ = SegmentTable(segments, count, total_elements, no_decay_);
  pass_segments_.clear();
  for (size_t s = 0; s < table_.size(); ++s) {
    const float decay = table_[s].decays ? static_cast<float>(weight_decay_) : 0.0f;
    const bool trust = trust_ratio_ == TrustRatio::every_segment ||
                       (trust_ratio_ == TrustRatio::decayed_segments && decay != 0.0f);
    pass_segments_.push_back({table_[s].offset, table_[s].count, decay, trust ? 1 : 0});
  }
  blocks_ = loom_optimizer::cut_into_blocks(pass_segments_);
  state_.assign(state_names_.size(), std::vector<float>(total_elements, 0.0f));
  block_sums_.assign(blocks_.size(), 0.0);
  ready_ = true;
}

bool FlatOptimizer::segment_decays(size_t index) const {
  if (index >= table_.size())
    throw loom::Error("segment index " + std::to_string(index) + " out of range (" +
                      std::to_string(table_.size()) + " segments)");
  return table_[index].decays;
}

double FlatOptimizer::sum_squares_by_block(const float* x) const {
  return loom_optimizer::sum_squares_by_block(for_each_block(), blocks_, x, block_sums_);
}

double FlatOptimizer::global_norm(const float* grads, double grad_scale) const {
  if (!ready_) throw loom::Error("global_norm() before setup()");
  return loom_optimizer::unscaled_norm(sum_squares_by_block(grads), grad_scale);
}

void FlatOptimizer::segment_norms(const float* data, double* norms) const {
  if (!ready_) throw loom::Error("segment_norms() before setup()");
  sum_squares_by_block(data);
  std::fill(norms, norms + table_.size(), 0.0);
  for (size_t b = 0; b < blocks_.size(); ++b) norms[blocks_[b].segment] += block_sums_[b];
  for (size_t s = 0; s < table_.size(); ++s) norms[s] = std::sqrt(norms[s]);
}

loom::OptimizerStateTensor FlatOptimizer::state_tensor(size_t index) {
  if (!ready_) throw loom::Error("state_tensor() before setup()");
  if (index >= state_names_.size())
    throw loom::Error("state tensor index " + std::to_string(index) + " out of range (" +
                      std::to_string(state_names_.size()) + " tensors)");
  if (backend_ != nullptr)
    throw loom::Error(
        "state_tensor(): the optimizer state lives in backend memory since attach(); "
        "read it through BackendOptimizer::backend_state()");
  return {state_names_[index], state_[index].data(), state_[index].size()};
}

void FlatOptimizer::reset_state() {
  for (auto& tensor : state_) std::fill(tensor.begin(), tensor.end(), 0.0f);
  for (const loom::Tensor& view : backend_views_) backend_->zero(view);
  steps_ = 0;
}

void FlatOptimizer::check_step(const float* params, const float* grads,
                               const loom::OptimizerStepArgs& args) const {
  if (!ready_) throw loom::Error("step() before setup()");
  if (backend_ != nullptr)
    throw loom::Error("step(): the optimizer runs on the backend since attach(); call step_on_backend()");
  if (table_.total_elements() > 0 && (params == nullptr || grads == nullptr))
    throw loom::Error("step(): parameter or gradient buffer is null");
  check_step_args(args, "step()");
}

void FlatOptimizer::check_finite_norm(double grad_norm, bool weights_changed) const {
  if (!std::isfinite(grad_norm))
    throw loom::Error("step(): the gradients are not finite (global norm " + std::to_string(grad_norm) +
                      ") at successful step " + std::to_string(steps_) +
                      "; the precision policy must skip such steps — " +
                      (weights_changed ? "the weights are now corrupted, resume from a checkpoint"
                                       : "the weights were left unchanged"));
}

loom::GradientScaling FlatOptimizer::clipped_scaling(double grad_scale, loom::ClipRule rule) const {
  return {grad_scale, max_grad_norm_, max_grad_norm_ > 0 ? rule : loom::ClipRule::none};
}

double FlatOptimizer::host_clip_divisor(const float* grads, double grad_scale, loom::ClipRule rule) const {
  if (max_grad_norm_ <= 0) return 1.0;
  const double grad_norm = global_norm(grads, grad_scale);
  check_finite_norm(grad_norm);
  return loom_optimizer::clip_divisor(rule, grad_norm, max_grad_norm_);
}

loom::OptimizerStepResult FlatOptimizer::finish_host_pass(double total, double grad_scale, double divisor) {
  const double grad_norm = loom_optimizer::unscaled_norm(total, grad_scale);
  check_finite_norm(grad_norm, /*weights_changed=*/true);
  ++steps_;
  return {grad_norm, divisor, steps_};
}

// ---- the backend path ---------------------------------------------------------------------------

void FlatOptimizer::attach(loom::Backend& backend, loom::OptimizerSteps& steps) {
  if (!ready_) throw loom::Error("attach() before setup()");
  if (backend_ != nullptr) throw loom::Error("attach() called twice");
  const size_t total = table_.total_elements();
  passes_ = &steps;
  plan_ = steps.create_plan(pass_segments_.data(), pass_segments_.size(), total);
  backend_state_.reserve(state_.size());
  for (std::vector<float>& host : state_) {
    loom::Buffer& buffer = backend_state_.emplace_back(backend, total * sizeof(float));
    backend_views_.push_back(buffer.view(loom::DType::f32, {static_cast<int64_t>(total)}));
    backend.copy_from_host(buffer.data(), host.data(), total * sizeof(float));
    std::vector<float>().swap(host);  // the host copy is no longer the state
  }
  backend_ = &backend;
}

void FlatOptimizer::inspect_gradients(const loom::Tensor& grads, const loom::Tensor& nonfinite_flag) {
  if (backend_ == nullptr) throw loom::Error("inspect_gradients() before attach()");
  passes_->gradient_norm(*plan_, grads, nonfinite_flag);
  gradients_inspected_ = true;
}

void FlatOptimizer::check_backend_step(const loom::OptimizerStepArgs& args) {
  if (backend_ == nullptr) throw loom::Error("step_on_backend() before attach()");
  if (!gradients_inspected_)
    throw loom::Error(
        "step_on_backend(): inspect_gradients() did not run since the last update, so the "
        "global gradient norm on the backend is not this step's");
  check_step_args(args, "step_on_backend()");
  gradients_inspected_ = false;
}

loom::OptimizerStepResult FlatOptimizer::read_last_result() {
  if (backend_ == nullptr) throw loom::Error("read_last_result() before attach()");
  const loom::OptimizerStepReport report = passes_->read_report(*plan_);
  return {report.grad_norm, report.clip_divisor, steps_};
}

void FlatOptimizer::write_working_copy(loom::OptimizerWorkingCopy& copy, const loom::Tensor& working) {
  if (backend_ == nullptr) throw loom::Error("write_working_copy() before attach()");
  copy.set_working_copy(*plan_, working);
}

loom::BackendStateTensor FlatOptimizer::backend_state(size_t index) {
  if (backend_ == nullptr) throw loom::Error("backend_state() before attach()");
  if (index >= backend_views_.size())
    throw loom::Error("state tensor index " + std::to_string(index) + " out of range (" +
                      std::to_string(backend_views_.size()) + " tensors)");
  return {state_names_[index], backend_views_[index]};
}

}  // namespace loom_optim
