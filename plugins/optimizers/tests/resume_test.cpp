// Exact resume at the optimizer level: N steps straight equal k steps, state tensors and counter
// copied out (as optimizer.safetensors / state.json hold them), a fresh optimizer restored from
// them, then N − k steps — bit for bit, for every optimizer.
#include <gtest/gtest.h>

#include <cstring>

#include "component_loader.hpp"
#include "flat_problem.hpp"

namespace {

struct Saved {
  std::vector<float> weights;
  std::vector<std::vector<float>> state;
  uint64_t steps = 0;
};

Saved save(loom::Optimizer& o, const std::vector<float>& weights) {
  Saved s{weights, {}, o.successful_steps()};
  for (size_t i = 0; i < o.num_state_tensors(); ++i) {
    const auto t = o.state_tensor(i);
    s.state.emplace_back(t.data, t.data + t.count);
  }
  return s;
}

void expect_resume_is_exact(const std::string& name, const std::string& options) {
  auto p = loom_optim_test::make_flat_problem(77, 6, 0.01f, 1.0f);
  auto run = [&](loom::Optimizer& o, std::vector<float>& w, int from, int to) {
    for (int step = from; step < to; ++step) o.step(w.data(), p.grads[step].data(), {1e-2 * (step + 1), 1.0});
  };
  auto straight = loom_optim_test::load_component<loom::Optimizer>(name, options);
  straight.get()->setup(p.table(), p.segments.size(), p.total);
  std::vector<float> w = p.params;
  run(*straight.get(), w, 0, 6);
  const Saved expected = save(*straight.get(), w);

  auto first = loom_optim_test::load_component<loom::Optimizer>(name, options);
  first.get()->setup(p.table(), p.segments.size(), p.total);
  std::vector<float> w2 = p.params;
  run(*first.get(), w2, 0, 3);
  const Saved checkpoint = save(*first.get(), w2);

  auto resumed = loom_optim_test::load_component<loom::Optimizer>(name, options);
  loom::Optimizer& r = *resumed.get();
  r.setup(p.table(), p.segments.size(), p.total);
  ASSERT_EQ(r.num_state_tensors(), checkpoint.state.size());
  for (size_t i = 0; i < checkpoint.state.size(); ++i)
    std::memcpy(r.state_tensor(i).data, checkpoint.state[i].data(),
                checkpoint.state[i].size() * sizeof(float));
  r.set_successful_steps(checkpoint.steps);
  std::vector<float> w3 = checkpoint.weights;
  run(r, w3, 3, 6);
  const Saved actual = save(r, w3);

  EXPECT_EQ(actual.steps, 6u);
  EXPECT_EQ(std::memcmp(actual.weights.data(), expected.weights.data(), w.size() * sizeof(float)), 0) << name;
  ASSERT_EQ(actual.state.size(), expected.state.size());
  for (size_t i = 0; i < actual.state.size(); ++i)
    EXPECT_EQ(actual.state[i], expected.state[i]) << name << " state " << i;
}

TEST(Resume, NvLambResumesBitForBit) {
  expect_resume_is_exact("nvlamb", "");
}

TEST(Resume, AdamWResumesBitForBit) {
  expect_resume_is_exact("adamw", "bias_correction = true\nmax_grad_norm = 1.0\n");
}

TEST(Resume, SgdMomentumResumesBitForBit) {
  expect_resume_is_exact("sgd", "momentum = 0.9\n");
}

}  // namespace
