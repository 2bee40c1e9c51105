// The backend path of every optimizer (BackendOptimizer over backend/cpu's OptimizerSteps) against
// the host path (Optimizer::step), bit for bit: weights (gaps included), moments, momentum
// buffers, global norms and clip divisors, step after step — with skipped steps (a non-finite
// gradient), loss-scaled gradients, clipping on and off, decay and no-decay segments, an empty
// segment, ‖w‖ = 0 and ‖u‖ = 0 segments, and several thread counts on both sides. Also the
// contract's refusals (no gradient pass before an update, host calls after attach, bad plans).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "component_loader.hpp"
#include "flat_problem.hpp"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/backend_optimizer.hpp"
#include "loom/sdk/ops/optimizer_steps.hpp"

namespace {

using loom_optim_test::FlatProblem;

loom::Tensor flat(std::vector<float>& v) {
  return loom::Tensor::contiguous(v.data(), loom::DType::f32, {static_cast<int64_t>(v.size())});
}

struct Trajectory {
  std::vector<float> weights;
  std::vector<std::vector<float>> state;
  std::vector<double> norms, divisors;  // per applied step
  std::vector<int> skipped;             // loop indices the check skipped
  uint64_t successful_steps = 0;
};

// Gradients of step `i`: the problem's, times `loss_scale`, with one inf at `bad_steps`.
std::vector<float> gradients(const FlatProblem& p, size_t i, float loss_scale, bool bad) {
  std::vector<float> g = p.grads[i % p.grads.size()];
  for (size_t k = 0; k < g.size(); ++k)
    if (!loom_optim_test::in_gap(p, k)) g[k] *= loss_scale;
  if (bad) {  // in the largest segment, far from its start
    const auto largest = std::max_element(p.segments.begin(), p.segments.end(),
                                          [](const auto& a, const auto& b) { return a.count < b.count; });
    g[largest->offset + largest->count / 2] = std::numeric_limits<float>::infinity();
  }
  return g;
}

bool has_nonfinite(const std::vector<float>& g) {
  for (float x : g)
    if (!std::isfinite(x)) return true;
  return false;
}

constexpr float kLossScale = 1024.0f;
const std::vector<size_t> kBadSteps = {2, 5};

// The host path: the optimizer on host buffers, a step skipped when the gradients hold a
// non-finite value (the precision policy's rule).
Trajectory on_host(const std::string& name, const std::string& options, FlatProblem p, size_t steps) {
  auto opt = loom_optim_test::load_component<loom::Optimizer>(name, options);
  loom::Optimizer& o = *opt.get();
  o.setup(p.table(), p.segments.size(), p.total);
  Trajectory t;
  t.weights = p.params;
  for (size_t i = 0; i < steps; ++i) {
    const bool bad = std::find(kBadSteps.begin(), kBadSteps.end(), i) != kBadSteps.end();
    const std::vector<float> g = gradients(p, i, kLossScale, bad);
    if (has_nonfinite(g)) {
      t.skipped.push_back(static_cast<int>(i));
      continue;
    }
    const loom::OptimizerStepResult r =
        o.step(t.weights.data(), g.data(), {1e-2 * (1.0 + 0.1 * i), 1.0 / kLossScale});
    t.norms.push_back(r.grad_norm);
    t.divisors.push_back(r.clip_divisor);
  }
  for (size_t i = 0; i < o.num_state_tensors(); ++i)
    t.state.emplace_back(o.state_tensor(i).data, o.state_tensor(i).data + o.state_tensor(i).count);
  t.successful_steps = o.successful_steps();
  return t;
}

// The backend path on backend/cpu with `backend_threads`: the gradient pass and its flag decide.
Trajectory on_backend(const std::string& name, const std::string& options, FlatProblem p, size_t steps,
                      int backend_threads) {
  auto backend = loom_optim_test::load_component<loom::Backend>(
      "cpu", "threads = " + std::to_string(backend_threads) + "\n");
  loom::OptimizerSteps* passes = backend.find<loom::OptimizerSteps>();
  if (passes == nullptr) throw std::runtime_error("backend/cpu offers no OptimizerSteps");
  auto opt = loom_optim_test::load_component<loom::Optimizer>(name, options);
  loom::BackendOptimizer* on_backend = opt.find<loom::BackendOptimizer>();
  if (on_backend == nullptr) throw std::runtime_error("optimizer/" + name + " offers no BackendOptimizer");
  loom::Optimizer& o = *opt.get();
  o.setup(p.table(), p.segments.size(), p.total);
  on_backend->attach(*backend.get(), *passes);
  Trajectory t;
  t.weights = p.params;
  int32_t flag = -7;
  const loom::Tensor flag_view = loom::Tensor::contiguous(&flag, loom::DType::i32, {1});
  for (size_t i = 0; i < steps; ++i) {
    const bool bad = std::find(kBadSteps.begin(), kBadSteps.end(), i) != kBadSteps.end();
    std::vector<float> g = gradients(p, i, kLossScale, bad);
    on_backend->inspect_gradients(flat(g), flag_view);
    EXPECT_EQ(flag, bad ? 1 : 0) << "step " << i;
    if (flag != 0) {
      t.skipped.push_back(static_cast<int>(i));
      continue;
    }
    on_backend->step_on_backend(flat(t.weights), flat(g), {1e-2 * (1.0 + 0.1 * i), 1.0 / kLossScale});
    const loom::OptimizerStepResult r = on_backend->read_last_result();
    EXPECT_EQ(r.successful_steps, o.successful_steps());
    t.norms.push_back(r.grad_norm);
    t.divisors.push_back(r.clip_divisor);
  }
  for (size_t i = 0; i < o.num_state_tensors(); ++i) {
    const loom::BackendStateTensor s = on_backend->backend_state(i);
    EXPECT_STREQ(s.name, i == 0 ? (name == "sgd" ? "momentum_buffer" : "exp_avg") : "exp_avg_sq");
    const auto* data = static_cast<const float*>(s.tensor.data);
    t.state.emplace_back(data, data + s.tensor.numel());
  }
  t.successful_steps = o.successful_steps();
  return t;
}

void expect_bit_identical(const Trajectory& host, const Trajectory& backend, const std::string& what) {
  ASSERT_FALSE(host.norms.empty()) << what << ": no step was applied";
  EXPECT_EQ(host.skipped, backend.skipped) << what;
  EXPECT_EQ(host.successful_steps, backend.successful_steps) << what;
  ASSERT_EQ(host.weights.size(), backend.weights.size()) << what;
  for (size_t i = 0; i < host.weights.size(); ++i)
    ASSERT_EQ(std::memcmp(&host.weights[i], &backend.weights[i], sizeof(float)), 0)
        << what << ": weight " << i << " is " << backend.weights[i] << ", the host path has "
        << host.weights[i];
  ASSERT_EQ(host.state.size(), backend.state.size()) << what;
  for (size_t s = 0; s < host.state.size(); ++s)
    EXPECT_EQ(
        std::memcmp(host.state[s].data(), backend.state[s].data(), host.state[s].size() * sizeof(float)), 0)
        << what << ": state tensor " << s;
  EXPECT_EQ(host.norms, backend.norms) << what;
  EXPECT_EQ(host.divisors, backend.divisors) << what;
}

struct Case {
  const char* optimizer;
  const char* options;
};

const Case kCases[] = {
    {"nvlamb", "lr = 0.01\n"},                                             // clipping at 1.0 (default)
    {"nvlamb", "max_grad_norm = 1e-4\ntrust_ratio_on_no_decay = true\n"},  // always clipped
    {"nvlamb", "max_grad_norm = 0.0\nbias_correction = false\nweight_decay = 0.1\n"},
    {"adamw", "max_grad_norm = 1e-4\nbias_correction = true\n"},
    {"adamw", "weight_decay = 0.05\n"},  // no clipping
    {"sgd", "momentum = 0.9\nnesterov = true\nweight_decay = 1e-3\nmax_grad_norm = 1e-4\n"},
    {"sgd", "momentum = 0.8\ndampening = 0.3\n"},
    {"sgd", "weight_decay = 1e-2\n"},  // no momentum buffer
};

TEST(BackendSteps, MatchTheHostOptimizersBitForBit) {
  const FlatProblem problem = loom_optim_test::make_flat_problem(5, 4, 0.02f, 1.0f);
  for (const Case& c : kCases)
    for (int threads : {1, 2}) {
      const std::string what =
          std::string(c.optimizer) + " {" + c.options + "} backend threads " + std::to_string(threads);
      const std::string options = std::string(c.options) + "threads = 2\n";
      expect_bit_identical(on_host(c.optimizer, options, problem, 8),
                           on_backend(c.optimizer, options, problem, 8, threads), what);
    }
}

// A layout of millions of elements, so both sides really run their blocks on several threads.
FlatProblem large_problem() {
  FlatProblem p;
  const char* names[] = {"a.weight", "a.bias", "b.LayerNorm.weight", "c.weight", "d.weight"};
  const size_t counts[] = {1'000'003, 777, 768, 1'500'000, 0};
  size_t offset = 1;
  for (size_t i = 0; i < 5; ++i) {
    p.names.push_back(names[i]);
    p.segments.push_back({nullptr, offset, counts[i], loom::DecayRule::by_name});
    offset += counts[i] + 3;
  }
  p.total = offset;
  p.params.assign(p.total, 0.5f);
  for (size_t i = 0; i < p.total; ++i)
    p.params[i] = 0.01f * static_cast<float>((i * 2654435761u) % 1000) - 5.0f;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g(p.total);
    for (size_t i = 0; i < p.total; ++i)
      g[i] = 1e-3f * static_cast<float>(((i + 7 * step) * 40503u) % 2001) - 1.0f;
    p.grads.push_back(std::move(g));
  }
  p.table();
  return p;
}

TEST(BackendSteps, MatchOnLargeBuffersWhateverTheThreadCounts) {
  const FlatProblem problem = large_problem();
  for (const char* name : {"nvlamb", "adamw", "sgd"}) {
    const std::string options = name == std::string("sgd") ? "momentum = 0.9\n" : "max_grad_norm = 1.0\n";
    const Trajectory host = on_host(name, options + "threads = 1\n", problem, 4);
    for (int threads : {1, 2, 5})
      expect_bit_identical(host, on_backend(name, options + "threads = 3\n", problem, 4, threads),
                           std::string(name) + " with " + std::to_string(threads) + " backend threads");
  }
}

TEST(BackendSteps, RefuseCallsOutsideTheirLifeCycle) {
  FlatProblem p = loom_optim_test::make_flat_problem(3, 1, 0.02f, 1.0f);
  auto backend = loom_optim_test::load_component<loom::Backend>("cpu", "threads = 1\n");
  auto opt = loom_optim_test::load_component<loom::Optimizer>("adamw");
  loom::BackendOptimizer& on_backend = *opt.find<loom::BackendOptimizer>();
  loom::OptimizerSteps& passes = *backend.find<loom::OptimizerSteps>();
  EXPECT_THROW(on_backend.attach(*backend.get(), passes), loom::Error);  // before setup()
  opt.get()->setup(p.table(), p.segments.size(), p.total);
  std::vector<float> w = p.params, g = p.grads[0];
  EXPECT_THROW(on_backend.step_on_backend(flat(w), flat(g), {1e-3, 1.0}), loom::Error);  // before attach()
  on_backend.attach(*backend.get(), passes);
  EXPECT_THROW(on_backend.attach(*backend.get(), passes), loom::Error);
  EXPECT_THROW(opt.get()->state_tensor(0), loom::Error);  // the state lives on the backend
  EXPECT_THROW(opt.get()->step(w.data(), g.data(), {1e-3, 1.0}), loom::Error);
  EXPECT_THROW(on_backend.step_on_backend(flat(w), flat(g), {1e-3, 1.0}), loom::Error);  // no gradient pass
  int32_t flag = 0;
  on_backend.inspect_gradients(flat(g), loom::Tensor::contiguous(&flag, loom::DType::i32, {1}));
  EXPECT_THROW(on_backend.step_on_backend(flat(w), flat(g), {-1.0, 1.0}), loom::Error);  // bad lr
  std::vector<float> short_grads(p.total - 1);
  EXPECT_THROW(
      on_backend.inspect_gradients(flat(short_grads), loom::Tensor::contiguous(&flag, loom::DType::i32, {1})),
      loom::Error);
  // reset_state zeroes the backend's moments too.
  on_backend.inspect_gradients(flat(g), loom::Tensor::contiguous(&flag, loom::DType::i32, {1}));
  on_backend.step_on_backend(flat(w), flat(g), {1e-3, 1.0});
  const loom::BackendStateTensor m = on_backend.backend_state(0);
  const auto* moments = static_cast<const float*>(m.tensor.data);
  EXPECT_NE(moments[p.segments[0].offset], 0.0f);
  opt.get()->reset_state();
  for (int64_t i = 0; i < m.tensor.numel(); ++i) ASSERT_EQ(moments[i], 0.0f);
  EXPECT_EQ(opt.get()->successful_steps(), 0u);
}

TEST(BackendSteps, PlansRefuseBadSegmentTablesNamingTheSegment) {
  auto backend = loom_optim_test::load_component<loom::Backend>("cpu", "threads = 1\n");
  loom::OptimizerSteps& passes = *backend.find<loom::OptimizerSteps>();
  const loom::OptimizerSegment overlapping[] = {{0, 10, 0.0f, 0}, {5, 10, 0.0f, 0}};
  try {
    passes.create_plan(overlapping, 2, 100);
    ADD_FAILURE() << "overlapping segments were accepted";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("segments 0 and 1 overlap"), std::string::npos) << e.what();
  }
  const loom::OptimizerSegment outside[] = {{0, 10, 0.0f, 0}, {95, 10, 0.0f, 1}};
  try {
    passes.create_plan(outside, 2, 100);
    ADD_FAILURE() << "a segment outside the buffers was accepted";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("segment 1 [95, 105) lies outside"), std::string::npos) << e.what();
  }
  // An empty segment anywhere overlaps nothing; aliasing buffers are refused by the update.
  const loom::OptimizerSegment fine[] = {{0, 10, 0.01f, 1}, {5, 0, 0.0f, 0}, {10, 20, 0.0f, 0}};
  loom::OptimizerPlan* plan = passes.create_plan(fine, 3, 30);
  std::vector<float> w(30, 1.0f), g(30, 0.5f), m(30, 0.0f);
  int32_t flag = 5;
  passes.gradient_norm(*plan, flat(g), loom::Tensor::contiguous(&flag, loom::DType::i32, {1}));
  EXPECT_EQ(flag, 0);
  EXPECT_THROW(passes.adamw_step(*plan, flat(w), flat(g), flat(m), flat(m), {1.0, 0.0, loom::ClipRule::none},
                                 loom::AdamConstants{0.9f, 0.1f, 0.999f, 0.001f, 1.0f, 1.0f, 1e-8f}, 1e-3),
               loom::Error);
  EXPECT_EQ(passes.read_report(*plan).grad_norm, 0.0);  // the refused update changed nothing
  passes.destroy_plan(plan);
}

}  // namespace
