// optimizer/sgd against a double-precision torch.optim.SGD: plain, heavy-ball momentum with
// dampening, Nesterov, weight decay and clipping, over several steps.
#include <gtest/gtest.h>

#include <cmath>

#include "component_loader.hpp"
#include "flat_problem.hpp"

namespace {

using loom_optim_test::FlatProblem;

struct SgdSettings {
  double lr = 0.1, momentum = 0.0, dampening = 0.0, weight_decay = 0.0, max_grad_norm = 0.0;
  bool nesterov = false;
  std::string toml() const {
    return "lr = " + std::to_string(lr) + "\nmomentum = " + std::to_string(momentum) +
           "\ndampening = " + std::to_string(dampening) + "\nweight_decay = " + std::to_string(weight_decay) +
           "\nmax_grad_norm = " + std::to_string(max_grad_norm) +
           "\nnesterov = " + (nesterov ? "true" : "false") + "\n";
  }
};

void expect_matches_reference(const SgdSettings& s, int steps = 5) {
  FlatProblem p = loom_optim_test::make_flat_problem(11, steps, 0.01f, 256.0f);
  auto opt = loom_optim_test::load_component<loom::Optimizer>("sgd", s.toml());
  loom::Optimizer& o = *opt.get();
  o.setup(p.table(), p.segments.size(), p.total);
  ASSERT_EQ(o.num_state_tensors(), s.momentum != 0 ? 1u : 0u);
  std::vector<double> w(p.params.begin(), p.params.end()), buffer(p.total);
  std::vector<double> buffer_magnitude(p.total), change_magnitude(p.total);  // float rounding scales
  std::vector<float> wf = p.params;
  for (int step = 0; step < steps; ++step) {
    const auto& g = p.grads[step];
    double squares = 0;
    for (const auto& seg : p.segments)
      for (size_t i = seg.offset; i < seg.offset + seg.count; ++i) squares += std::pow(g[i] / 256.0, 2);
    const double norm = std::sqrt(squares);
    const double coefficient = s.max_grad_norm > 0 ? std::min(1.0, s.max_grad_norm / (norm + 1e-6)) : 1.0;
    for (size_t k = 0; k < p.segments.size(); ++k) {
      for (size_t i = p.segments[k].offset; i < p.segments[k].offset + p.segments[k].count; ++i) {
        const double wd = p.decays[k] ? s.weight_decay : 0.0;
        double d = g[i] / 256.0 * coefficient + wd * w[i];
        double d_magnitude = std::abs(g[i] / 256.0 * coefficient) + wd * std::abs(w[i]);
        if (s.momentum != 0) {
          buffer[i] = step == 0 ? d : s.momentum * buffer[i] + (1 - s.dampening) * d;
          buffer_magnitude[i] =
              step == 0 ? d_magnitude : s.momentum * buffer_magnitude[i] + (1 - s.dampening) * d_magnitude;
          d = s.nesterov ? d + s.momentum * buffer[i] : buffer[i];
          d_magnitude = s.nesterov ? d_magnitude + s.momentum * buffer_magnitude[i] : buffer_magnitude[i];
        }
        w[i] -= s.lr * d;
        change_magnitude[i] += s.lr * d_magnitude;
      }
    }
    const auto result = o.step(wf.data(), g.data(), {s.lr, 1.0 / 256});
    EXPECT_NEAR(result.grad_norm, norm, 1e-9 * norm);
  }
  for (size_t i = 0; i < p.total; ++i) {
    ASSERT_NEAR(wf[i], w[i], 4e-7 * std::abs(w[i]) + 1e-5 * change_magnitude[i] + 1e-30) << "element " << i;
    if (s.momentum != 0 && !loom_optim_test::in_gap(p, i)) {
      ASSERT_NEAR(o.state_tensor(0).data[i], buffer[i], 1e-6 * buffer_magnitude[i] + 1e-30);
    }
  }
}

TEST(Sgd, PlainMatchesDoubleReference) {
  expect_matches_reference(SgdSettings{});
}

TEST(Sgd, MomentumWithDampeningAndWeightDecayMatchesDoubleReference) {
  SgdSettings s;
  s.momentum = 0.9;
  s.dampening = 0.1;
  s.weight_decay = 0.05;
  expect_matches_reference(s);
}

TEST(Sgd, NesterovWithClippingMatchesDoubleReference) {
  SgdSettings s;
  s.momentum = 0.8;
  s.nesterov = true;
  s.max_grad_norm = 0.5;
  expect_matches_reference(s);
}

}  // namespace
