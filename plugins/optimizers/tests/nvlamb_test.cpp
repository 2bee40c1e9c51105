// optimizer/nvlamb against a straightforward double-precision LAMB written from
// docs/reference.md §2.1, over several steps on random data.
#include <gtest/gtest.h>

#include <cmath>

#include "component_loader.hpp"
#include "flat_problem.hpp"
#include "recipe/errors.hpp"

namespace {

using loom_optim_test::FlatProblem;

struct LambSettings {
  double lr = 6e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.01, max_grad_norm = 1.0;
  bool bias_correction = true, trust_ratio_on_no_decay = false;
};

// Double-precision LAMB over the problem's segments, element by element, as the spec states it.
struct LambReference {
  std::vector<double> w, m, v;
  // Σ of the magnitudes that went into m and into the weight changes: float rounding is relative to
  // these, not to the (possibly cancelled) results.
  std::vector<double> m_magnitude, change_magnitude;
  int step = 0;
  double last_norm = 0, last_divisor = 0;

  explicit LambReference(const FlatProblem& p)
      : w(p.params.begin(), p.params.end()),
        m(p.total),
        v(p.total),
        m_magnitude(p.total),
        change_magnitude(p.total) {}

  void apply(const FlatProblem& p, const std::vector<float>& g, double grad_scale, const LambSettings& s) {
    last_norm = loom_optim_test::scaled_norm(p, g, grad_scale);
    last_divisor = s.max_grad_norm > 0 && last_norm > s.max_grad_norm ? last_norm / s.max_grad_norm : 1.0;
    ++step;
    const double bc1 = s.bias_correction ? 1 - std::pow(s.beta1, step) : 1;
    const double bc2 = s.bias_correction ? 1 - std::pow(s.beta2, step) : 1;
    for (size_t k = 0; k < p.segments.size(); ++k) {
      const auto& seg = p.segments[k];
      const double wd = p.decays[k] ? s.weight_decay : 0.0;
      std::vector<double> u(seg.count), u_magnitude(seg.count);
      double w_norm = 0, u_norm = 0;
      for (size_t j = 0; j < seg.count; ++j) {
        const size_t i = seg.offset + j;
        const double gi = g[i] * grad_scale / last_divisor;
        m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
        m_magnitude[i] = s.beta1 * m_magnitude[i] + (1 - s.beta1) * std::abs(gi);
        v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
        u[j] = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + s.eps) + wd * w[i];
        u_magnitude[j] = (m_magnitude[i] / bc1) / (std::sqrt(v[i] / bc2) + s.eps) + wd * std::abs(w[i]);
        w_norm += w[i] * w[i];
        u_norm += u[j] * u[j];
      }
      w_norm = std::sqrt(w_norm);
      u_norm = std::sqrt(u_norm);
      double ratio = s.lr;
      if ((s.trust_ratio_on_no_decay || wd != 0) && w_norm != 0 && u_norm != 0)
        ratio = s.lr * w_norm / u_norm;
      for (size_t j = 0; j < seg.count; ++j) {
        w[seg.offset + j] -= ratio * u[j];
        change_magnitude[seg.offset + j] += ratio * u_magnitude[j];
      }
    }
  }
};

std::string lamb_toml(const LambSettings& s) {
  return "lr = " + std::to_string(s.lr) + "\nmax_grad_norm = " + std::to_string(s.max_grad_norm) +
         "\nbias_correction = " + (s.bias_correction ? "true" : "false") +
         "\ntrust_ratio_on_no_decay = " + (s.trust_ratio_on_no_decay ? "true" : "false") + "\nthreads = 2\n";
}

// Runs `steps` NVLAMB steps through the plugin and the reference; compares weights, moments, norms.
void expect_matches_reference(const LambSettings& s, float grad_std, float loss_scale, int steps = 5) {
  FlatProblem p = loom_optim_test::make_flat_problem(1234, steps, grad_std, loss_scale);
  auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb", lamb_toml(s));
  loom::Optimizer& o = *opt.get();
  opt.call([&](loom::Optimizer& x) { x.setup(p.table(), p.segments.size(), p.total); });
  LambReference ref(p);
  std::vector<float> w = p.params;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> grads_before = p.grads[step];
    const auto result = opt.call([&](loom::Optimizer& x) {
      return x.step(w.data(), p.grads[step].data(), {s.lr, 1.0 / loss_scale});
    });
    ref.apply(p, p.grads[step], 1.0 / loss_scale, s);
    EXPECT_NEAR(result.grad_norm, ref.last_norm, 1e-9 * ref.last_norm) << "step " << step;
    EXPECT_NEAR(result.clip_divisor, ref.last_divisor, 1e-9 * ref.last_divisor);
    EXPECT_EQ(result.successful_steps, static_cast<uint64_t>(step + 1));
    EXPECT_EQ(p.grads[step], grads_before) << "gradients must be read only";
  }
  const float* m = o.state_tensor(0).data;
  const float* v = o.state_tensor(1).data;
  size_t checked = 0;
  for (size_t i = 0; i < p.total; ++i) {
    if (loom_optim_test::in_gap(p, i)) {
      ASSERT_EQ(w[i], p.params[i]) << "gap element " << i << " was written";
      ASSERT_EQ(m[i], 0.0f);
      continue;
    }
    // fp32 storage of w, plus 1e-5 of the step: an eps inside the sqrt or a missed bias
    // correction moves the step by far more.
    ASSERT_NEAR(w[i], ref.w[i], 4e-7 * std::abs(ref.w[i]) + 1e-5 * ref.change_magnitude[i] + 1e-30)
        << "element " << i;
    ASSERT_NEAR(m[i], ref.m[i], 1e-6 * ref.m_magnitude[i] + 1e-30) << "element " << i;
    ASSERT_NEAR(v[i], ref.v[i], 1e-5 * std::abs(ref.v[i]) + 1e-20) << "element " << i;
    ++checked;
  }
  EXPECT_GT(checked, 70000u);
}

TEST(NvLamb, MatchesDoubleReferenceWithClipping) {
  LambSettings s;
  expect_matches_reference(s, 0.01f, 1.0f);  // global norm ≈ 2.7 > 1: pre-normalised
}

TEST(NvLamb, MatchesDoubleReferenceWithoutClippingAndWithLossScale) {
  LambSettings s;
  expect_matches_reference(s, 1e-4f, 1024.0f);  // norm ≈ 0.03 < 1; grads carry a 2^10 loss scale
}

TEST(NvLamb, MatchesDoubleReferenceWithTrustRatioOnNoDecay) {
  LambSettings s;
  s.trust_ratio_on_no_decay = true;
  expect_matches_reference(s, 0.01f, 65536.0f);
}

TEST(NvLamb, MatchesDoubleReferenceWithoutBiasCorrectionOrClipping) {
  LambSettings s;
  s.bias_correction = false;
  s.max_grad_norm = 0.0;
  expect_matches_reference(s, 0.01f, 1.0f);
}

// The switch matters: on a no-decay tensor the trust ratio changes the step size.
TEST(NvLamb, TrustRatioSwitchChangesNoDecayUpdatesOnly) {
  FlatProblem p = loom_optim_test::make_flat_problem(7, 1, 0.01f, 1.0f);
  std::vector<float> plain = p.params, nvlamb = p.params;
  for (bool on : {false, true}) {
    LambSettings s;
    s.trust_ratio_on_no_decay = on;
    auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb", lamb_toml(s));
    opt.call([&](loom::Optimizer& x) {
      x.setup(p.table(), p.segments.size(), p.total);
      x.step(on ? nvlamb.data() : plain.data(), p.grads[0].data(), {s.lr, 1.0});
    });
  }
  const auto& bias = p.segments[1];    // query.bias: no decay, nonzero weights
  const auto& weight = p.segments[0];  // query.weight: decayed, ratio either way
  EXPECT_NE(plain[bias.offset], nvlamb[bias.offset]);
  EXPECT_EQ(plain[weight.offset], nvlamb[weight.offset]);
}

TEST(NvLamb, ResolvesNoDecayByNameAndHonoursExplicitRules) {
  FlatProblem p = loom_optim_test::make_flat_problem(1, 0, 0.01f, 1.0f);
  auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb");
  opt.call([&](loom::Optimizer& x) { x.setup(p.table(), p.segments.size(), p.total); });
  for (size_t i = 0; i < p.segments.size(); ++i)
    EXPECT_EQ(opt.get()->segment_decays(i), p.decays[i]) << p.names[i];

  FlatProblem q = loom_optim_test::make_flat_problem(1, 0, 0.01f, 1.0f);
  q.segments[0].decay = loom::DecayRule::no_decay;  // a weight forced out of decay
  q.segments[1].decay = loom::DecayRule::decay;     // a bias forced in
  auto custom = loom_optim_test::load_component<loom::Optimizer>("nvlamb", "no_decay = [\"pooler\"]\n");
  custom.call([&](loom::Optimizer& x) { x.setup(q.table(), q.segments.size(), q.total); });
  EXPECT_FALSE(custom.get()->segment_decays(0));
  EXPECT_TRUE(custom.get()->segment_decays(1));
  EXPECT_TRUE(custom.get()->segment_decays(2));   // LayerNorm decays: not in the custom pattern list
  EXPECT_FALSE(custom.get()->segment_decays(5));  // bert.pooler.dense.bias
}

TEST(NvLamb, StateIsNamedFlatAndResettable) {
  FlatProblem p = loom_optim_test::make_flat_problem(3, 2, 0.01f, 1.0f);
  auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb");
  loom::Optimizer& o = *opt.get();
  opt.call([&](loom::Optimizer& x) { x.setup(p.table(), p.segments.size(), p.total); });
  ASSERT_EQ(o.num_state_tensors(), 2u);
  EXPECT_STREQ(o.state_tensor(0).name, "exp_avg");
  EXPECT_STREQ(o.state_tensor(1).name, "exp_avg_sq");
  EXPECT_EQ(o.state_tensor(0).count, p.total);
  std::vector<float> w = p.params;
  o.step(w.data(), p.grads[0].data(), {1e-3, 1.0});
  o.step(w.data(), p.grads[1].data(), {1e-3, 1.0});
  EXPECT_EQ(o.successful_steps(), 2u);
  EXPECT_NE(o.state_tensor(1).data[p.segments[0].offset], 0.0f);
  o.reset_state();
  EXPECT_EQ(o.successful_steps(), 0u);
  for (size_t i = 0; i < p.total; ++i) ASSERT_EQ(o.state_tensor(1).data[i], 0.0f);
  o.set_successful_steps(41);
  EXPECT_EQ(o.successful_steps(), 41u);
}

TEST(NvLamb, RefusesNonFiniteGradientsAndLeavesWeightsAlone) {
  FlatProblem p = loom_optim_test::make_flat_problem(3, 1, 0.01f, 1.0f);
  p.grads[0][p.segments[7].offset + 100] = std::numeric_limits<float>::infinity();
  auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb");
  opt.call([&](loom::Optimizer& x) { x.setup(p.table(), p.segments.size(), p.total); });
  std::vector<float> w = p.params;
  try {
    opt.call([&](loom::Optimizer& x) { x.step(w.data(), p.grads[0].data(), {1e-3, 1.0}); });
    FAIL() << "expected an error";
  } catch (const loom::host::PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(w, p.params);
  EXPECT_EQ(opt.get()->successful_steps(), 0u);
}

TEST(NvLamb, SegmentNormsAndGlobalNorm) {
  FlatProblem p = loom_optim_test::make_flat_problem(5, 1, 0.01f, 8.0f);
  auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb");
  loom::Optimizer& o = *opt.get();
  o.setup(p.table(), p.segments.size(), p.total);
  std::vector<double> norms(p.segments.size());
  o.segment_norms(p.params.data(), norms.data());
  double total = 0;
  for (size_t k = 0; k < p.segments.size(); ++k) {
    double expect = 0;
    for (size_t i = 0; i < p.segments[k].count; ++i)
      expect += std::pow(double(p.params[p.segments[k].offset + i]), 2);
    EXPECT_NEAR(norms[k], std::sqrt(expect), 1e-12 * std::sqrt(expect)) << p.names[k];
    for (size_t i = 0; i < p.segments[k].count; ++i)
      total += std::pow(p.grads[0][p.segments[k].offset + i] / 8.0, 2);
  }
  EXPECT_EQ(norms[4], 0.0);  // the all-zero weight
  EXPECT_NEAR(o.global_norm(p.grads[0].data(), 1.0 / 8), std::sqrt(total), 1e-12 * std::sqrt(total));
}

TEST(NvLamb, RejectsBadSegmentTables) {
  FlatProblem p = loom_optim_test::make_flat_problem(1, 0, 0.01f, 1.0f);
  auto setup_with = [&](FlatProblem q, size_t total) {
    auto opt = loom_optim_test::load_component<loom::Optimizer>("nvlamb");
    opt.call([&](loom::Optimizer& x) { x.setup(q.table(), q.segments.size(), total); });
  };
  FlatProblem overlap = p;
  overlap.segments[1].offset = overlap.segments[0].offset + 10;
  EXPECT_THROW(setup_with(overlap, p.total), loom::host::PluginError);
  EXPECT_THROW(setup_with(p, p.total - 10), loom::host::PluginError);  // last segment out of range
}

}  // namespace
