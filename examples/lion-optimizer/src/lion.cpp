// optimizer/lion; see lion.hpp for the update rule.
#include "lion.hpp"

#include <algorithm>
#include <cmath>

#include "loom/sdk/error.hpp"

namespace loom_lion {
namespace {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return name.find(p) != std::string::npos; });
}

float sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }

}  // namespace

Lion::Lion(loom::ComponentContext& context) {
  loom::Options& options = context.options();
  // Lion's update has unit size per element, so its lr is ~3-10x smaller than AdamW's.
  lr_ = options.get<double>("lr", 1e-4, loom::Range{0.0, 1.0});
  beta1_ = options.get<double>("beta1", 0.9, loom::Range{0.0, 1.0});
  beta2_ = options.get<double>("beta2", 0.99, loom::Range{0.0, 1.0});
  weight_decay_ = options.get<double>("weight_decay", 0.0, loom::Range{0.0, 10.0});
  max_grad_norm_ = options.get<double>("max_grad_norm", 0.0, loom::Range{0.0, 1e6});
  no_decay_ = options.get<std::vector<std::string>>("no_decay", {"bias", "LayerNorm"});
  for (const std::string& pattern : no_decay_)
    if (pattern.empty()) options.fail("no_decay", "an empty pattern would match every parameter");
}

void Lion::setup(const loom::ParameterSegment* segments, size_t count, size_t total_elements) {
  if (ready_) throw loom::Error("optimizer/lion: setup() called twice");
  if (count > 0 && segments == nullptr) throw loom::Error("optimizer/lion: setup() got no segment table");
  for (size_t i = 0; i < count; ++i) {
    const loom::ParameterSegment& s = segments[i];
    const std::string name = s.name != nullptr ? s.name : "";
    if (s.offset > total_elements || s.count > total_elements - s.offset)
      throw loom::Error("optimizer/lion: segment '" + name + "' [" + std::to_string(s.offset) + ", " +
                        std::to_string(s.offset + s.count) + ") lies outside the " +
                        std::to_string(total_elements) + "-element buffer");
    bool decays = false;
    switch (s.decay) {
      case loom::DecayRule::by_name: decays = !matches_any(name, no_decay_); break;
      case loom::DecayRule::no_decay: decays = false; break;
      case loom::DecayRule::decay: decays = true; break;
      default:
        throw loom::Error("optimizer/lion: segment '" + name + "' has an unknown decay rule " +
                          std::to_string(static_cast<int>(s.decay)));
    }
    segments_.push_back({name, s.offset, s.count, decays});
  }
  std::vector<const Segment*> by_offset;
  for (const Segment& s : segments_)
    if (s.count > 0) by_offset.push_back(&s);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->offset + by_offset[i - 1]->count > by_offset[i]->offset)
      throw loom::Error("optimizer/lion: segments '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                        "' overlap in the flat buffers");
  exp_avg_.assign(total_elements, 0.0f);
  ready_ = true;
}

void Lion::require_setup(const char* what) const {
  if (!ready_) throw loom::Error(std::string("optimizer/lion: ") + what + " before setup()");
}

bool Lion::segment_decays(size_t index) const {
  if (index >= segments_.size()) throw loom::Error("optimizer/lion: segment index out of range");
  return segments_[index].decays && weight_decay_ > 0.0;
}

double Lion::sum_of_squares(const float* data, const Segment& segment) const {
  double sum = 0.0;
  for (size_t k = segment.offset; k < segment.offset + segment.count; ++k)
    sum += static_cast<double>(data[k]) * data[k];
  return sum;
}

double Lion::global_norm(const float* grads, double grad_scale) const {
  require_setup("global_norm()");
  double sum = 0.0;
  for (const Segment& s : segments_) sum += sum_of_squares(grads, s);
  return std::sqrt(sum) * grad_scale;
}

void Lion::segment_norms(const float* data, double* norms) const {
  require_setup("segment_norms()");
  for (size_t i = 0; i < segments_.size(); ++i) norms[i] = std::sqrt(sum_of_squares(data, segments_[i]));
}

loom::OptimizerStepResult Lion::step(float* params, const float* grads, const loom::OptimizerStepArgs& args) {
  require_setup("step()");
  const double grad_norm = global_norm(grads, args.grad_scale);
  // Non-finite gradients must never reach the weights (the precision policy skips such steps).
  if (!std::isfinite(grad_norm))
    throw loom::Error("optimizer/lion: gradient norm is " + std::to_string(grad_norm) +
                      "; refusing to update the weights");
  // torch.nn.utils.clip_grad_norm_'s divisor.
  const double divisor = max_grad_norm_ > 0.0 && grad_norm > max_grad_norm_ ? (grad_norm + 1e-6) / max_grad_norm_ : 1.0;
  const float grad_mul = static_cast<float>(args.grad_scale / divisor);
  const float b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_), lr = static_cast<float>(args.lr);
  for (const Segment& s : segments_) {
    const float decay = s.decays ? static_cast<float>(weight_decay_) : 0.0f;
    for (size_t k = s.offset; k < s.offset + s.count; ++k) {
      const float g = grads[k] * grad_mul;
      const float c = b1 * exp_avg_[k] + (1.0f - b1) * g;
      params[k] -= lr * (sign(c) + decay * params[k]);
      exp_avg_[k] = b2 * exp_avg_[k] + (1.0f - b2) * g;
    }
  }
  ++steps_;
  return {grad_norm, divisor, steps_};
}

loom::OptimizerStateTensor Lion::state_tensor(size_t index) {
  require_setup("state_tensor()");
  if (index != 0) throw loom::Error("optimizer/lion: state tensor " + std::to_string(index) + " does not exist");
  return {"exp_avg", exp_avg_.data(), exp_avg_.size()};
}

void Lion::reset_state() {
  std::fill(exp_avg_.begin(), exp_avg_.end(), 0.0f);
  steps_ = 0;
}

}  // namespace loom_lion
