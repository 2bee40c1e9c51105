// optimizer/adamw against a double-precision AdamW (apex FusedAdam adam_w_mode;
// docs/reference.md §2.5), with and without bias correction and global clipping, over several steps.
#include <gtest/gtest.h>

#include <cmath>

#include "component_loader.hpp"
#include "flat_problem.hpp"

namespace {

using loom_optim_test::FlatProblem;

struct AdamSettings {
  double lr = 5e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01, max_grad_norm = 0.0;
  bool bias_correction = false;
};

struct AdamReference {
  std::vector<double> w, m, v;
  std::vector<double> m_magnitude, change_magnitude;  // what float rounding is relative to
  int step = 0;
  double last_norm = 0, last_divisor = 1;
  explicit AdamReference(const FlatProblem& p)
      : w(p.params.begin(), p.params.end()),
        m(p.total),
        v(p.total),
        m_magnitude(p.total),
        change_magnitude(p.total) {}

  void apply(const FlatProblem& p, const std::vector<float>& g, double grad_scale, const AdamSettings& s) {
    last_norm = loom_optim_test::scaled_norm(p, g, grad_scale);
    // SQuAD's GradientClipper / torch clip_grad_norm_: coefficient max / (N + 1e-6) when below 1.
    const double coefficient = s.max_grad_norm > 0 ? s.max_grad_norm / (last_norm + 1e-6) : 1.0;
    last_divisor = coefficient < 1 ? 1 / coefficient : 1.0;
    ++step;
    const double bc1 = s.bias_correction ? 1 - std::pow(s.beta1, step) : 1;
    const double bc2 = s.bias_correction ? 1 - std::pow(s.beta2, step) : 1;
    for (size_t k = 0; k < p.segments.size(); ++k) {
      const double wd = p.decays[k] ? s.weight_decay : 0.0;
      for (size_t i = p.segments[k].offset; i < p.segments[k].offset + p.segments[k].count; ++i) {
        const double gi = g[i] * grad_scale * std::min(coefficient, 1.0);
        m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
        m_magnitude[i] = s.beta1 * m_magnitude[i] + (1 - s.beta1) * std::abs(gi);
        v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
        change_magnitude[i] +=
            s.lr * ((m_magnitude[i] / bc1) / (std::sqrt(v[i] / bc2) + s.eps) + wd * std::abs(w[i]));
        w[i] -= s.lr * ((m[i] / bc1) / (std::sqrt(v[i] / bc2) + s.eps) + wd * w[i]);
      }
    }
  }
};

void expect_matches_reference(const AdamSettings& s, float grad_std, float loss_scale, int steps = 6) {
  FlatProblem p = loom_optim_test::make_flat_problem(99, steps, grad_std, loss_scale);
  const std::string toml = "lr = " + std::to_string(s.lr) +
                           "\nmax_grad_norm = " + std::to_string(s.max_grad_norm) +
                           "\nbias_correction = " + (s.bias_correction ? "true" : "false") + "\n";
  auto opt = loom_optim_test::load_component<loom::Optimizer>("adamw", toml);
  loom::Optimizer& o = *opt.get();
  o.setup(p.table(), p.segments.size(), p.total);
  AdamReference ref(p);
  std::vector<float> w = p.params;
  for (int step = 0; step < steps; ++step) {
    const auto result = o.step(w.data(), p.grads[step].data(), {s.lr, 1.0 / loss_scale});
    ref.apply(p, p.grads[step], 1.0 / loss_scale, s);
    EXPECT_NEAR(result.grad_norm, ref.last_norm, 1e-9 * ref.last_norm);
    EXPECT_NEAR(result.clip_divisor, ref.last_divisor, 1e-9 * ref.last_divisor);
  }
  const float* m = o.state_tensor(0).data;
  const float* v = o.state_tensor(1).data;
  for (size_t i = 0; i < p.total; ++i) {
    if (loom_optim_test::in_gap(p, i)) {
      ASSERT_EQ(w[i], p.params[i]);
      continue;
    }
    ASSERT_NEAR(w[i], ref.w[i], 4e-7 * std::abs(ref.w[i]) + 1e-5 * ref.change_magnitude[i] + 1e-30)
        << "element " << i;
    ASSERT_NEAR(m[i], ref.m[i], 1e-6 * ref.m_magnitude[i] + 1e-30) << "element " << i;
    ASSERT_NEAR(v[i], ref.v[i], 1e-5 * std::abs(ref.v[i]) + 1e-20) << "element " << i;
  }
}

TEST(AdamW, MatchesDoubleReferenceWithReferenceDefaults) {
  expect_matches_reference(AdamSettings{}, 0.01f, 1.0f);
}

TEST(AdamW, MatchesDoubleReferenceWithBiasCorrection) {
  AdamSettings s;
  s.bias_correction = true;
  expect_matches_reference(s, 0.01f, 4096.0f);
}

TEST(AdamW, MatchesDoubleReferenceWithGlobalClipping) {
  AdamSettings s;
  s.max_grad_norm = 1.0;  // the norm is ≈ 2.7: clipped
  expect_matches_reference(s, 0.01f, 1.0f);
  s.bias_correction = true;
  expect_matches_reference(s, 1e-4f, 2.0f);  // ≈ 0.03: not clipped
}

TEST(AdamW, DefaultsFollowTheReferenceFineTuningOptimizer) {
  auto opt = loom_optim_test::load_component<loom::Optimizer>("adamw");
  EXPECT_DOUBLE_EQ(opt.get()->base_lr(), 1e-3);
  // eps 1e-8, no bias correction, no clipping: a 1-element step of g = 1 moves w by lr·(1/(1+1e-8)).
  const char* name = "x.weight";
  loom::ParameterSegment seg{name, 0, 1, loom::DecayRule::no_decay};
  opt.get()->setup(&seg, 1, 1);
  float w = 0.5f, g = 1.0f;
  const auto r = opt.get()->step(&w, &g, {1e-3, 1.0});
  // m = 0.1, v = 0.001 (no bias correction): u = 0.1 / (sqrt(0.001) + 1e-8)
  EXPECT_NEAR(w, 0.5 - 1e-3 * 0.1 / (std::sqrt(0.001) + 1e-8), 1e-7);
  EXPECT_EQ(r.clip_divisor, 1.0);
}

}  // namespace
