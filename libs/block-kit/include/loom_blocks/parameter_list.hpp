// ParameterList: the parameters a block declares and the views the host binds to them.
//
// Blocks declare parameters once in setup() (name below the block's scope, shape, initialiser,
// decay flag, optional tie) and get back an index; after bind_parameters() `view(index)` yields
// the master/compute/grad views. Names are string literals (static storage).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "loom/sdk/block.hpp"
#include "loom/sdk/error.hpp"

namespace loom_blocks {

class ParameterList {
 public:
  /// Declares a parameter; returns its index.
  size_t declare(const char* name, std::initializer_list<int64_t> shape, loom::ParameterInit init, bool decay,
                 const char* tied_to = nullptr) {
    loom::ParameterSpec spec{};
    spec.name = name;
    spec.ndim = static_cast<int32_t>(shape.size());
    int k = 0;
    for (int64_t extent : shape) spec.shape[k++] = extent;
    spec.init = init;
    spec.weight_decay = decay ? 1 : 0;
    spec.tied_to = tied_to;
    specs_.push_back(spec);
    return specs_.size() - 1;
  }
  /// A Linear(in → out) weight [out, in] (normal, decayed).
  size_t weight(const char* name, int64_t out, int64_t in) {
    return declare(name, {out, in}, loom::ParameterInit::normal, true);
  }
  /// A bias [n] (zeros, not decayed).
  size_t bias(const char* name, int64_t n) { return declare(name, {n}, loom::ParameterInit::zeros, false); }
  /// A LayerNorm γ [n] (ones, not decayed).
  size_t gamma(const char* name, int64_t n) { return declare(name, {n}, loom::ParameterInit::ones, false); }

  size_t size() const { return specs_.size(); }
  const loom::ParameterSpec& spec(size_t index) const { return specs_.at(index); }

  /// Stores the host's views, checking count and shapes against the declarations.
  void bind(const loom::ParameterView* views, size_t count, const char* block) {
    if (count != specs_.size())
      throw loom::Error(std::string(block) + ": bind_parameters got " + std::to_string(count) +
                        " views for " + std::to_string(specs_.size()) + " parameters");
    views_.assign(views, views + count);
    for (size_t i = 0; i < count; ++i) {
      const loom::ParameterSpec& s = specs_[i];
      const loom::Tensor& m = views_[i].master;
      bool same = m.ndim == s.ndim && views_[i].grad.same_shape(m) && views_[i].compute.same_shape(m);
      for (int k = 0; same && k < s.ndim; ++k) same = m.shape[k] == s.shape[k];
      if (!same)
        throw loom::Error(std::string(block) + ": parameter '" + s.name + "' bound to a view of shape " +
                          m.describe() + " that does not match its declaration");
    }
  }
  /// The views of parameter `index` (after bind).
  const loom::ParameterView& view(size_t index) const { return views_.at(index); }

 private:
  std::vector<loom::ParameterSpec> specs_;
  std::vector<loom::ParameterView> views_;
};

}  // namespace loom_blocks
