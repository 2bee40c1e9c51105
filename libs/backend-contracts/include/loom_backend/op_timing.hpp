// Per-op timing for the OpProfiler interface (loom/sdk/ops/op_profiler.hpp), shared by the
// backends: which family each op belongs to, the totals per family, and the scope that times one
// op. A backend owns an OpTimer (wall time here; backend/cuda's times with CUDA events) and hands
// a pointer to it to every op's TimedChecks while profiling is on, nullptr while it is off: then
// an op pays one pointer test on entry and one on exit.
//
// Ops enter through the backend's checks(op), which returns a TimedChecks: the op is timed from
// there to the end of the op's body, where the checks object goes out of scope. That needs
//   const auto check = checks("op");
// at the top of the op (a temporary `checks("op").on_device(...)` would end the timing at once).
// An op that calls another of the backend's ops counts once: only the outermost scope is timed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstring>

#include "loom/sdk/ops/op_profiler.hpp"
#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

/// The family of the op named `op` (its name in checks() and in backend.hpp), as the table in
/// op_profiler.hpp lists them; OpFamily::other for a name not listed.
inline loom::OpFamily op_family(const char* op) {
  using F = loom::OpFamily;
  struct Entry {
    const char* name;
    F family;
  };
  static constexpr Entry kTable[] = {
      {"gemm", F::gemm},
      {"linear_bias_forward", F::gemm},
      {"attention_forward", F::attention_forward},
      {"windowed_attention_forward", F::attention_forward},
      {"packed_attention_forward", F::attention_forward},
      {"softmax_forward", F::attention_forward},
      {"additive_key_mask", F::attention_forward},
      {"attention_backward", F::attention_backward},
      {"windowed_attention_backward", F::attention_backward},
      {"packed_attention_backward", F::attention_backward},
      {"softmax_backward", F::attention_backward},
      {"layernorm_forward", F::normalization},
      {"layernorm_backward", F::normalization},
      {"residual_layernorm_forward", F::normalization},
      {"residual_layernorm_backward", F::normalization},
      {"residual_layernorm_backward_copy", F::normalization},
      {"fill", F::elementwise},
      {"zero", F::elementwise},
      {"copy", F::elementwise},
      {"cast", F::elementwise},
      {"bias_add", F::elementwise},
      {"bias_grad", F::elementwise},
      {"bias_grad_copy", F::elementwise},
      {"bias_gelu_forward", F::elementwise},
      {"bias_gelu_backward", F::elementwise},
      {"bias_gelu_backward_copy", F::elementwise},
      {"gated_gelu_forward", F::elementwise},
      {"gated_gelu_backward", F::elementwise},
      {"rotary_apply", F::elementwise},
      {"packed_rotary_apply", F::elementwise},
      {"tanh_forward", F::elementwise},
      {"tanh_backward", F::elementwise},
      {"add", F::elementwise},
      {"axpby", F::elementwise},
      {"dropout_forward", F::elementwise},
      {"dropout_backward", F::elementwise},
      {"embedding_gather", F::embedding},
      {"embedding_scatter_add", F::embedding},
      {"cross_entropy", F::loss},
      {"create_plan", F::optimizer},
      {"set_working_copy", F::optimizer},
      {"gradient_norm", F::optimizer},
      {"adamw_step", F::optimizer},
      {"lamb_step", F::optimizer},
      {"sgd_step", F::optimizer},
      {"sum_squares", F::optimizer},
      {"global_norm", F::optimizer},
      {"check_finite", F::optimizer},
      {"copy_from_host", F::upload},
      {"copy_to_host", F::download},
  };
  for (const Entry& entry : kTable)
    if (std::strcmp(entry.name, op) == 0) return entry.family;
  return F::other;
}

/// Time and calls per family, as take_op_profile hands them out.
class OpTotals {
 public:
  void add(loom::OpFamily family, double milliseconds) {
    const auto index = static_cast<size_t>(family);
    if (index >= loom::kOpFamilyCount) return;
    totals_[index].milliseconds += milliseconds;
    totals_[index].calls += 1;
  }
  /// OpProfiler::take_op_profile: writes totals[0, count), zeroes what is past kOpFamilyCount,
  /// clears these totals and returns kOpFamilyCount.
  size_t take(loom::OpFamilyTime* totals, size_t count) {
    for (size_t i = 0; i < count && totals != nullptr; ++i)
      totals[i] = i < loom::kOpFamilyCount ? totals_[i] : loom::OpFamilyTime{0, 0};
    *this = OpTotals{};
    return loom::kOpFamilyCount;
  }
  const loom::OpFamilyTime& operator[](loom::OpFamily family) const {
    return totals_[static_cast<size_t>(family)];
  }

 private:
  loom::OpFamilyTime totals_[loom::kOpFamilyCount] = {};
};

/// Times the outermost op of each nest: enter() and exit() pair up, begin() and end() run once
/// per outermost op. Ops are called from one thread at a time.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  void enter(const char* op) {
    if (depth_ == 0) begin(op_family(op));  // may throw: then the op is not entered
    ++depth_;
  }
  void exit() noexcept {
    if (--depth_ == 0) end();
  }
  /// The totals of the ops timed since the last take (OpProfiler::take_op_profile).
  virtual size_t take(loom::OpFamilyTime* totals, size_t count) = 0;

 protected:
  virtual void begin(loom::OpFamily family) = 0;
  /// Ends the op begun last; never throws (it runs as the op's scope ends, also when it throws).
  virtual void end() noexcept = 0;

 private:
  int depth_ = 0;
};

/// Wall time of each op on the calling thread: the timer of backends whose ops are synchronous.
class WallOpTimer final : public OpTimer {
 public:
  size_t take(loom::OpFamilyTime* totals, size_t count) override { return totals_.take(totals, count); }

 protected:
  void begin(loom::OpFamily family) override {
    family_ = family;
    start_ = Clock::now();
  }
  void end() noexcept override {
    totals_.add(family_, std::chrono::duration<double, std::milli>(Clock::now() - start_).count());
  }

 private:
  using Clock = std::chrono::steady_clock;
  OpTotals totals_;
  loom::OpFamily family_ = loom::OpFamily::other;
  Clock::time_point start_{};
};

/// One op's timing, from construction to destruction; does nothing with a null timer.
class OpTimingScope {
 public:
  OpTimingScope(OpTimer* timer, const char* op) : timer_(timer) {
    if (timer_ != nullptr) timer_->enter(op);
  }
  ~OpTimingScope() {
    if (timer_ != nullptr) timer_->exit();
  }
  OpTimingScope(const OpTimingScope&) = delete;
  OpTimingScope& operator=(const OpTimingScope&) = delete;

 private:
  OpTimer* timer_;
};

/// An op's argument checks that also time the op while they are in scope (a backend's checks()).
class TimedChecks : public ArgumentChecks {
 public:
  TimedChecks(const char* op, loom::Device device, OpTimer* timer)
      : ArgumentChecks(op, device), timing_(timer, op) {}

 private:
  OpTimingScope timing_;
};

}  // namespace loom_backend
