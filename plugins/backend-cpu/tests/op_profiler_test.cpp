// Per-op timing (OpProfiler; loom_backend/op_timing.hpp, the part every backend shares): each op
// name's family as op_profiler.hpp lists it, nested ops counted once in the outermost, a timer
// that fails to begin leaving no op open, totals handed out once and padded to the caller's
// count; and backend/cpu's wall-time profile: nothing while off, every family its ops ran in
// while on (copies included), an op that throws still closed.
#include <stdexcept>
#include <string>
#include <utility>

#include "loom_backend/op_timing.hpp"
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;
using loom::OpFamily;
using loom::OpFamilyTime;

TEST(OpFamilies, EveryOpInTheFamilyTheSdkDocuments) {
  const std::pair<const char*, OpFamily> expected[] = {
      {"gemm", OpFamily::gemm},
      {"attention_forward", OpFamily::attention_forward},
      {"softmax_forward", OpFamily::attention_forward},
      {"additive_key_mask", OpFamily::attention_forward},
      {"attention_backward", OpFamily::attention_backward},
      {"softmax_backward", OpFamily::attention_backward},
      {"layernorm_forward", OpFamily::normalization},
      {"layernorm_backward", OpFamily::normalization},
      {"residual_layernorm_forward", OpFamily::normalization},
      {"residual_layernorm_backward", OpFamily::normalization},
      {"fill", OpFamily::elementwise},
      {"zero", OpFamily::elementwise},
      {"copy", OpFamily::elementwise},
      {"cast", OpFamily::elementwise},
      {"bias_add", OpFamily::elementwise},
      {"bias_grad", OpFamily::elementwise},
      {"bias_gelu_forward", OpFamily::elementwise},
      {"bias_gelu_backward", OpFamily::elementwise},
      {"tanh_forward", OpFamily::elementwise},
      {"tanh_backward", OpFamily::elementwise},
      {"add", OpFamily::elementwise},
      {"axpby", OpFamily::elementwise},
      {"dropout_forward", OpFamily::elementwise},
      {"dropout_backward", OpFamily::elementwise},
      {"embedding_gather", OpFamily::embedding},
      {"embedding_scatter_add", OpFamily::embedding},
      {"cross_entropy", OpFamily::loss},
      {"create_plan", OpFamily::optimizer},
      {"gradient_norm", OpFamily::optimizer},
      {"adamw_step", OpFamily::optimizer},
      {"lamb_step", OpFamily::optimizer},
      {"sgd_step", OpFamily::optimizer},
      {"sum_squares", OpFamily::optimizer},
      {"global_norm", OpFamily::optimizer},
      {"check_finite", OpFamily::optimizer},
      {"copy_from_host", OpFamily::upload},
      {"copy_to_host", OpFamily::download},
  };
  for (const auto& [op, family] : expected) EXPECT_EQ(loom_backend::op_family(op), family) << op;
  EXPECT_EQ(loom_backend::op_family("an_op_of_the_future"), OpFamily::other);
  EXPECT_STREQ(loom::op_family_name(OpFamily::attention_backward), "attention_backward");
  EXPECT_STREQ(loom::op_family_name(OpFamily::other), "other");
  EXPECT_STREQ(loom::op_family_name(static_cast<OpFamily>(loom::kOpFamilyCount)), "unknown");
}

/// Counts begin/end and adds 1 ms per op, or fails to begin when told to.
class CountingTimer final : public loom_backend::OpTimer {
 public:
  size_t take(OpFamilyTime* totals, size_t count) override { return totals_.take(totals, count); }
  int begins = 0, ends = 0;
  bool fail_next_begin = false;

 protected:
  void begin(OpFamily family) override {
    if (fail_next_begin) {
      fail_next_begin = false;
      throw std::runtime_error("no event");
    }
    ++begins;
    family_ = family;
  }
  void end() noexcept override {
    ++ends;
    totals_.add(family_, 1.0);
  }

 private:
  loom_backend::OpTotals totals_;
  OpFamily family_ = OpFamily::other;
};

std::vector<OpFamilyTime> take_all(loom_backend::OpTimer& timer) {
  std::vector<OpFamilyTime> totals(loom::kOpFamilyCount);
  EXPECT_EQ(timer.take(totals.data(), totals.size()), loom::kOpFamilyCount);
  return totals;
}

TEST(OpTimer, NestedOpsCountOnceInTheOutermost) {
  CountingTimer timer;
  {
    const loom_backend::OpTimingScope gemm(&timer, "gemm");
    { const loom_backend::OpTimingScope zero(&timer, "zero"); }  // a GEMM's beta = 0 through zero
    { const loom_backend::TimedChecks fill("fill", loom::Device{}, &timer); }
  }
  { const loom_backend::TimedChecks layernorm("layernorm_forward", loom::Device{}, &timer); }
  EXPECT_EQ(timer.begins, 2);
  EXPECT_EQ(timer.ends, 2);
  const std::vector<OpFamilyTime> totals = take_all(timer);
  EXPECT_EQ(totals[static_cast<size_t>(OpFamily::gemm)].calls, 1u);
  EXPECT_DOUBLE_EQ(totals[static_cast<size_t>(OpFamily::gemm)].milliseconds, 1.0);
  EXPECT_EQ(totals[static_cast<size_t>(OpFamily::normalization)].calls, 1u);
  EXPECT_EQ(totals[static_cast<size_t>(OpFamily::elementwise)].calls, 0u) << "nested ops are the outer op's";
  // Taken: the next take starts from zero.
  for (const OpFamilyTime& family : take_all(timer)) EXPECT_EQ(family.calls, 0u);
}

TEST(OpTimer, ABeginThatFailsLeavesNoOpOpen) {
  CountingTimer timer;
  timer.fail_next_begin = true;
  EXPECT_THROW((void)loom_backend::OpTimingScope(&timer, "gemm"), std::runtime_error);
  { const loom_backend::OpTimingScope copy(&timer, "copy_from_host"); }
  EXPECT_EQ(timer.begins, 1) << "the op after the failure is outermost again";
  EXPECT_EQ(take_all(timer)[static_cast<size_t>(OpFamily::upload)].calls, 1u);
}

TEST(OpTimer, NullTimerTimesNothing) {
  const loom_backend::TimedChecks checks("gemm", loom::Device{}, nullptr);
  EXPECT_THROW(checks.require(false, "still checks"), loom::Error);
}

TEST(OpTotals, TakeWritesTheCallersCountPaddedWithZeros) {
  loom_backend::OpTotals totals;
  totals.add(OpFamily::gemm, 2.0);
  totals.add(OpFamily::gemm, 0.5);
  totals.add(OpFamily::other, 1.0);
  totals.add(static_cast<OpFamily>(loom::kOpFamilyCount + 4), 9.0);  // not a family: dropped
  std::vector<OpFamilyTime> longer(loom::kOpFamilyCount + 2, OpFamilyTime{-1, 99});
  EXPECT_EQ(totals.take(longer.data(), longer.size()), loom::kOpFamilyCount);
  EXPECT_DOUBLE_EQ(longer[0].milliseconds, 2.5);
  EXPECT_EQ(longer[0].calls, 2u);
  EXPECT_EQ(longer[static_cast<size_t>(OpFamily::other)].calls, 1u);
  EXPECT_EQ(longer[loom::kOpFamilyCount].calls, 0u);
  EXPECT_DOUBLE_EQ(longer[loom::kOpFamilyCount + 1].milliseconds, 0.0);
  totals.add(OpFamily::gemm, 3.0);
  OpFamilyTime shorter[1] = {};
  EXPECT_EQ(totals.take(shorter, 1), loom::kOpFamilyCount);
  EXPECT_DOUBLE_EQ(shorter[0].milliseconds, 3.0);
}

std::vector<OpFamilyTime> take_profile(loom_cpu::CpuBackend& backend) {
  std::vector<OpFamilyTime> totals(loom::kOpFamilyCount);
  EXPECT_EQ(backend.take_op_profile(totals.data(), totals.size()), loom::kOpFamilyCount);
  return totals;
}

const OpFamilyTime& of(const std::vector<OpFamilyTime>& totals, OpFamily family) {
  return totals[static_cast<size_t>(family)];
}

TEST(CpuOpProfiler, WallTimePerFamilyOnlyWhileOn) {
  loom_cpu::CpuBackend backend(1);
  const int64_t n = 96;
  auto a = random_floats(n * n, 1), b = random_floats(n * n, 2), c = random_floats(n * n, 3);
  std::vector<float> gamma(n, 1.0f), beta(n, 0.0f), mean(n), rstd(n), y(n * n);
  const auto run_ops = [&] {
    backend.gemm(view(a, {n, n}), false, view(b, {n, n}), true, view(c, {n, n}), 1.0f, 0.0f);
    backend.gemm(view(a, {n, n}), true, view(b, {n, n}), false, view(c, {n, n}), 1.0f, 1.0f);
    backend.zero(view(y, {n, n}));  // through fill: one elementwise op
    backend.layernorm_forward(view(c, {n, n}), view(gamma, {n}), view(beta, {n}), 1e-12f, view(y, {n, n}),
                              view(mean, {n}), view(rstd, {n}));
    backend.copy_from_host(a.data(), b.data(), b.size() * sizeof(float));
    backend.copy_to_host(b.data(), c.data(), c.size() * sizeof(float));
  };
  run_ops();
  for (const OpFamilyTime& family : take_profile(backend)) EXPECT_EQ(family.calls, 0u) << "off by default";

  backend.set_op_profiling(true);
  run_ops();
  const std::vector<OpFamilyTime> on = take_profile(backend);
  EXPECT_EQ(of(on, OpFamily::gemm).calls, 2u);
  EXPECT_GT(of(on, OpFamily::gemm).milliseconds, 0.0) << "two 96³ GEMMs take time";
  EXPECT_EQ(of(on, OpFamily::elementwise).calls, 1u);
  EXPECT_EQ(of(on, OpFamily::normalization).calls, 1u);
  EXPECT_EQ(of(on, OpFamily::upload).calls, 1u);
  EXPECT_EQ(of(on, OpFamily::download).calls, 1u);
  EXPECT_EQ(of(on, OpFamily::attention_forward).calls, 0u);
  for (const OpFamilyTime& family : on) EXPECT_GE(family.milliseconds, 0.0);

  // An op that refuses its arguments is closed all the same: the next op is its own.
  EXPECT_THROW(backend.gemm(view(a, {n, n}), false, view(gamma, {n, 1}), false, view(c, {n, n}), 1.0f, 0.0f),
               loom::Error);
  backend.zero(view(y, {n, n}));
  const std::vector<OpFamilyTime> after_throw = take_profile(backend);
  EXPECT_EQ(of(after_throw, OpFamily::gemm).calls, 1u);
  EXPECT_EQ(of(after_throw, OpFamily::elementwise).calls, 1u);

  backend.set_op_profiling(false);
  run_ops();
  for (const OpFamilyTime& family : take_profile(backend)) EXPECT_EQ(family.calls, 0u) << "switched off";
}

}  // namespace
