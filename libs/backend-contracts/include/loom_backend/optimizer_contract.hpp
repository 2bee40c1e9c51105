// The argument contract of the OptimizerSteps family (loom/sdk/ops/optimizer_steps.hpp) and its
// working copy (ops/optimizer_working_copy.hpp), shared by every backend that offers them: the
// segment table a plan is made from and the views each pass gets, checked before any memory is
// touched, with messages naming the op and the argument.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/ops/optimizer_working_copy.hpp"
#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

/// create_plan: every segment inside [0, total_elements), no two overlapping, decays finite.
inline std::vector<loom::OptimizerSegment> checked_optimizer_segments(const ArgumentChecks& check,
                                                                      const loom::OptimizerSegment* segments,
                                                                      size_t count, size_t total_elements) {
  check.require(count == 0 || segments != nullptr, "the segment table is null");
  check.require(count <= UINT32_MAX, "more than 2^32 segments");
  std::vector<loom::OptimizerSegment> table(segments, segments + count);
  for (size_t i = 0; i < count; ++i) {
    const loom::OptimizerSegment& s = table[i];
    const std::string label = "segment " + std::to_string(i) + " [" + std::to_string(s.offset) + ", " +
                              std::to_string(s.offset + s.count) + ")";
    check.require(
        s.offset <= total_elements && s.count <= total_elements - s.offset,
        label + " lies outside the flat buffers of " + std::to_string(total_elements) + " elements");
    check.require(std::isfinite(s.weight_decay), label + " has a weight decay that is not finite");
    check.require(s.trust_ratio == 0 || s.trust_ratio == 1,
                  label + " has trust_ratio " + std::to_string(s.trust_ratio) + ", expected 0 or 1");
  }
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return table[a].offset < table[b].offset; });
  size_t previous = SIZE_MAX;
  for (size_t index : order) {
    if (table[index].count == 0) continue;  // an empty segment overlaps nothing
    if (previous != SIZE_MAX)
      check.require(table[previous].offset + table[previous].count <= table[index].offset,
                    "segments " + std::to_string(previous) + " and " + std::to_string(index) +
                        " overlap in the flat buffers");
    previous = index;
  }
  return table;
}

/// A flat buffer of a pass: f32 (or one of `dtypes`) [total_elements], contiguous, in this
/// backend's memory.
inline void check_flat_buffer(const ArgumentChecks& check, const char* name, const loom::Tensor& t,
                              size_t total_elements,
                              std::initializer_list<loom::DType> dtypes = {loom::DType::f32}) {
  check.tensor(name, t, dtypes);
  check.require(t.numel() == static_cast<int64_t>(total_elements),
                std::string(name) + " " + t.describe() + " must hold the plan's " +
                    std::to_string(total_elements) + " elements");
}

/// set_working_copy's copy (OptimizerWorkingCopy): bf16 or f16 [total_elements], contiguous, in
/// this backend's memory; an undefined tensor (no copy) passes.
inline void check_working_copy(const ArgumentChecks& check, const loom::Tensor& working, size_t total_elements) {
  if (working.defined())
    check_flat_buffer(check, "working", working, total_elements, {loom::DType::bf16, loom::DType::f16});
}

/// The buffers of one update (absent ones skipped) occupy disjoint memory: the passes read and
/// write them element by element and assume no aliasing.
inline void check_disjoint(const ArgumentChecks& check,
                           std::initializer_list<std::pair<const char*, loom::Tensor>> views) {
  for (auto a = views.begin(); a != views.end(); ++a)
    for (auto b = a + 1; b != views.end(); ++b) {
      if (!a->second.defined() || !b->second.defined()) continue;
      const auto a_begin = reinterpret_cast<uintptr_t>(a->second.data);
      const auto b_begin = reinterpret_cast<uintptr_t>(b->second.data);
      const bool apart = a_begin + a->second.nbytes() <= b_begin || b_begin + b->second.nbytes() <= a_begin;
      check.require(apart, std::string(a->first) + " and " + b->first + " overlap");
    }
}

/// The buffers of adamw_step and lamb_step: flat, and disjoint from each other and from the plan's
/// working copy (undefined when it has none).
inline void check_adam_buffers(const ArgumentChecks& check, size_t total_elements, const loom::Tensor& params,
                               const loom::Tensor& grads, const loom::Tensor& exp_avg,
                               const loom::Tensor& exp_avg_sq, const loom::Tensor& working) {
  check_flat_buffer(check, "params", params, total_elements);
  check_flat_buffer(check, "grads", grads, total_elements);
  check_flat_buffer(check, "exp_avg", exp_avg, total_elements);
  check_flat_buffer(check, "exp_avg_sq", exp_avg_sq, total_elements);
  check_disjoint(check, {{"params", params},
                         {"grads", grads},
                         {"exp_avg", exp_avg},
                         {"exp_avg_sq", exp_avg_sq},
                         {"working", working}});
}

/// The buffers of sgd_step: the same, the momentum buffer absent for SGD without momentum.
inline void check_sgd_buffers(const ArgumentChecks& check, size_t total_elements, const loom::Tensor& params,
                              const loom::Tensor& grads, const loom::Tensor& momentum_buffer,
                              const loom::Tensor& working) {
  check_flat_buffer(check, "params", params, total_elements);
  check_flat_buffer(check, "grads", grads, total_elements);
  if (momentum_buffer.defined()) check_flat_buffer(check, "momentum_buffer", momentum_buffer, total_elements);
  check_disjoint(check,
                 {{"params", params}, {"grads", grads}, {"momentum_buffer", momentum_buffer}, {"working", working}});
}

/// The non-finite flag of gradient_norm: i32 [1].
inline void check_nonfinite_flag(const ArgumentChecks& check, const loom::Tensor& flag) {
  check.tensor("nonfinite_flag", flag, {loom::DType::i32});
  check.require(flag.numel() == 1, "nonfinite_flag " + flag.describe() + " must hold one element");
}

/// An update's scalars: grad_scale and lr finite (> 0, ≥ 0), a known clip rule with its maximum.
inline void check_update_scalars(const ArgumentChecks& check, const loom::GradientScaling& scaling,
                                 double lr) {
  check.require(std::isfinite(scaling.grad_scale) && scaling.grad_scale > 0,
                "grad_scale " + std::to_string(scaling.grad_scale) + " is not a finite number > 0");
  check.require(std::isfinite(lr) && lr >= 0, "lr " + std::to_string(lr) + " is not a finite number >= 0");
  const auto rule = static_cast<int32_t>(scaling.clip);
  check.require(rule >= 0 && rule <= 2, "unknown clip rule " + std::to_string(rule));
  check.require(
      scaling.clip == loom::ClipRule::none ||
          (std::isfinite(scaling.max_grad_norm) && scaling.max_grad_norm > 0),
      "max_grad_norm " + std::to_string(scaling.max_grad_norm) + " must be a finite number > 0 to clip");
}

}  // namespace loom_backend
