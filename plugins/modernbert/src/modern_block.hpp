// ModernBlock: what every ModernBERT block shares beyond loom_blocks::BlockBase — the family's
// config keys (modern_config.hpp) and its LayerNorm, which has no β unless `norm_bias` says so.
//
// A norm without β runs the backend's LayerNorm with a zero β taken from scratch and its β gradient
// summed into scratch and dropped: the op the backend has, not a new one (docs/modernbert.md).
#pragma once

#include <string>

#include "loom_blocks/block_base.hpp"
#include "loom_blocks/config_keys.hpp"
#include "loom_blocks/parameter_list.hpp"
#include "loom_blocks/region_carver.hpp"
#include "modern_config.hpp"

namespace loom_modernbert {

using loom_blocks::RegionCarver;

class ModernBlock : public loom_blocks::BlockBase {
 protected:
  explicit ModernBlock(std::string name) : BlockBase(std::move(name)) {}

  void check_config() override {
    check_shared_sizes();
    modern_ = read_modern_config(loom_blocks::ConfigKeys(config_json_, config_source_, name_), config_);
  }

  /// A LayerNorm's parameters: γ, and β when the config has norm biases.
  struct Norm {
    size_t gamma = 0, beta = 0;
    bool has_beta = false;
  };
  Norm declare_norm(const char* weight, const char* bias) {
    Norm n;
    n.gamma = params_.gamma(weight, config_.hidden_size);
    n.has_beta = modern_.norm_bias;
    if (n.has_beta) n.beta = params_.bias(bias, config_.hidden_size);
    return n;
  }
  /// What a norm without β needs from scratch: one [H] f32 vector (zero β, or the dropped dβ).
  void carve_norm_scratch(RegionCarver& r) const { r.take(loom::DType::f32, {config_.hidden_size}); }
  loom::Tensor norm_scratch(RegionCarver& r) const { return r.take(loom::DType::f32, {config_.hidden_size}); }

  /// y = LayerNorm(x) (f32 [rows, H]); `spare` is norm_scratch's vector, zeroed here when needed.
  void norm_forward(const Norm& n, const loom::Tensor& x, const loom::Tensor& y, const loom::Tensor& mean,
                    const loom::Tensor& rstd, const loom::Tensor& spare) const {
    if (!n.has_beta) be().zero(spare);
    be().layernorm_forward(x, master(n.gamma), n.has_beta ? master(n.beta) : spare,
                           static_cast<float>(modern_.norm_eps), y, mean, rstd);
  }
  /// dx = (or +=, when accumulate) LayerNorm'(dy); γ (and β) gradients accumulate.
  void norm_backward(const Norm& n, const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& mean,
                     const loom::Tensor& rstd, const loom::Tensor& dx, bool accumulate,
                     const loom::Tensor& spare) const {
    be().layernorm_backward(dy, x, master(n.gamma), mean, rstd, dx, grad(n.gamma), n.has_beta ? grad(n.beta) : spare,
                            accumulate);
  }

  ModernConfig modern_;
};

}  // namespace loom_modernbert
