// A trainer's step loop over precision + optimizer + schedule, with overflows injected under
// fp16-mixed: skipped steps leave weights, moments, the step counter and the schedule untouched,
// and because loss scales are powers of two the run ends bit-identical to an fp32 run that never
// saw the bad steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "component_loader.hpp"
#include "flat_problem.hpp"
#include "loom/sdk/precision.hpp"
#include "loom/sdk/schedule.hpp"

namespace {

struct RunResult {
  std::vector<float> weights, exp_avg;
  std::vector<double> lrs;
  uint64_t successful_steps = 0, skipped_steps = 0;
  std::vector<double> loss_scales;
};

// `overflow_at`: loop iterations whose backward "overflows" (one gradient becomes inf).
RunResult train(const std::string& precision_name, const std::string& precision_options,
                const std::vector<int>& overflow_at, loom_optim_test::FlatProblem p) {
  auto precision = loom::host::Component<loom::Precision>();
  {
    loom::host::PluginSearchOptions search;
    search.directories = {LOOM_PLUGIN_DIR};
    search.default_paths = false;
    search.environment = false;
    loom::host::PluginRegistry registry(search);
    precision = registry.create<loom::Precision>(*registry.find(LOOM_KIND_PRECISION, precision_name),
                                                 {"precision", precision_options, "", "test:1:1"}, false);
  }
  auto optimizer = loom_optim_test::load_component<loom::Optimizer>("nvlamb", "lr = 0.01\n");
  auto schedule = loom_optim_test::load_component<loom::Schedule>("poly-warmup", "warmup = 0.3\n");
  loom::Optimizer& opt = *optimizer.get();
  loom::Precision& prec = *precision.get();
  opt.setup(p.table(), p.segments.size(), p.total);
  schedule.get()->setup(p.grads.size());

  RunResult r;
  r.weights = p.params;
  std::vector<float> grads(p.total);
  size_t next = 0;  // the next true gradient; only an applied step consumes it
  for (int iteration = 0; next < p.grads.size(); ++iteration) {
    const double scale = prec.loss_scale();
    r.loss_scales.push_back(scale);
    for (size_t i = 0; i < p.total; ++i) grads[i] = p.grads[next][i] * static_cast<float>(scale);
    if (std::find(overflow_at.begin(), overflow_at.end(), iteration) != overflow_at.end())
      grads[p.segments[0].offset + 3] = std::numeric_limits<float>::infinity();
    const loom::PrecisionDecision decision =
        prec.after_backward(prec.any_nonfinite(grads.data(), grads.size()));
    if (!decision.apply) continue;
    const double lr = schedule.get()->lr(opt.base_lr(), opt.successful_steps());
    r.lrs.push_back(lr);
    opt.step(r.weights.data(), grads.data(), {lr, decision.grad_scale});
    ++next;
  }
  r.successful_steps = opt.successful_steps();
  r.skipped_steps = prec.skipped_steps();
  r.exp_avg.assign(opt.state_tensor(0).data, opt.state_tensor(0).data + p.total);
  return r;
}

TEST(SkippedSteps, LeaveNoTraceAndScaledRunsMatchFp32BitForBit) {
  const auto problem = loom_optim_test::make_flat_problem(21, 8, 0.01f, 1.0f);
  // Gaps hold 1e30 filler the optimizer never reads; keep it finite under scaling.
  auto p = problem;
  for (auto& g : p.grads)
    for (size_t i = 0; i < p.total; ++i)
      if (loom_optim_test::in_gap(p, i)) g[i] = 0.0f;

  const RunResult fp32 = train("fp32", "", {}, p);
  const RunResult fp16 =
      train("fp16-mixed", "initial_scale = 1024.0\ngrowth_interval = 3\n", {0, 1, 5, 9, 10}, p);

  EXPECT_EQ(fp32.successful_steps, 8u);
  EXPECT_EQ(fp16.successful_steps, 8u);
  EXPECT_EQ(fp16.skipped_steps, 5u);
  EXPECT_EQ(fp32.lrs, fp16.lrs);  // the schedule saw the same counter values
  // 1024 → 512 → 256 (two overflows), clean steps grow it every 3, overflows halve it.
  EXPECT_EQ(fp16.loss_scales.front(), 1024.0);
  EXPECT_EQ(fp16.loss_scales[2], 256.0);
  ASSERT_EQ(fp32.weights.size(), fp16.weights.size());
  EXPECT_EQ(std::memcmp(fp32.weights.data(), fp16.weights.data(), fp32.weights.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(fp32.exp_avg.data(), fp16.exp_avg.data(), fp32.exp_avg.size() * sizeof(float)), 0);
}

}  // namespace
