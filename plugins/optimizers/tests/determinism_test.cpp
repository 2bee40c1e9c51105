// Results are bit-identical whatever the thread count: same inputs → same weights, moments and
// norms with 1, 2 and 3 threads, on a layout big enough that threads really are used.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "component_loader.hpp"
#include "loom/sdk/optimizer.hpp"

namespace {

struct Outcome {
  std::vector<float> weights;
  std::vector<std::vector<float>> state;
  std::vector<double> norms;
};

// Uniform in [-scale, scale), from a counter hash (fast enough for millions of elements).
float hashed_uniform(uint64_t i, float scale) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return (static_cast<float>(x >> 40) * 0x1p-24f * 2.0f - 1.0f) * scale;
}

Outcome run(const std::string& optimizer, const std::string& options, unsigned threads) {
  // Segments sized to make many blocks, including ragged ones.
  const char* names[] = {"a.weight", "a.bias", "b.weight", "c.LayerNorm.weight", "d.weight"};
  const size_t counts[] = {1'000'003, 777, 1'500'000, 768, 65'537};
  std::vector<loom::ParameterSegment> segments;
  size_t offset = 0;
  for (size_t i = 0; i < 5; ++i) {
    segments.push_back({names[i], offset, counts[i], loom::DecayRule::by_name});
    offset += counts[i];
  }
  std::vector<float> w(offset), g(offset);
  for (size_t i = 0; i < offset; ++i) w[i] = hashed_uniform(i, 0.05f);
  auto opt = loom_optim_test::load_component<loom::Optimizer>(
      optimizer, options + "threads = " + std::to_string(threads) + "\n");
  loom::Optimizer& o = *opt.get();
  o.setup(segments.data(), segments.size(), offset);
  Outcome out;
  for (uint64_t step = 1; step <= 3; ++step) {
    for (size_t i = 0; i < offset; ++i) g[i] = hashed_uniform(step * offset + i, 2e-3f);
    out.norms.push_back(o.step(w.data(), g.data(), {1e-2, 1.0}).grad_norm);
    out.norms.push_back(o.global_norm(g.data(), 1.0));
  }
  std::vector<double> segment_norms(segments.size());
  o.segment_norms(w.data(), segment_norms.data());
  out.norms.insert(out.norms.end(), segment_norms.begin(), segment_norms.end());
  out.weights = w;
  for (size_t i = 0; i < o.num_state_tensors(); ++i)
    out.state.emplace_back(o.state_tensor(i).data, o.state_tensor(i).data + o.state_tensor(i).count);
  return out;
}

void expect_bit_identical(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.weights.size(), b.weights.size());
  EXPECT_EQ(std::memcmp(a.weights.data(), b.weights.data(), a.weights.size() * sizeof(float)), 0);
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t i = 0; i < a.state.size(); ++i)
    EXPECT_EQ(std::memcmp(a.state[i].data(), b.state[i].data(), a.state[i].size() * sizeof(float)), 0);
  ASSERT_EQ(a.norms.size(), b.norms.size());
  for (size_t i = 0; i < a.norms.size(); ++i) EXPECT_EQ(a.norms[i], b.norms[i]) << "norm " << i;
}

TEST(Determinism, NvLambIsBitIdenticalAcrossThreadCounts) {
  const Outcome one = run("nvlamb", "", 1);
  expect_bit_identical(one, run("nvlamb", "", 2));
  expect_bit_identical(one, run("nvlamb", "", 3));
  expect_bit_identical(one, run("nvlamb", "", 1));
}

TEST(Determinism, AdamWAndSgdAreBitIdenticalAcrossThreadCounts) {
  const std::string adam = "max_grad_norm = 1.0\nbias_correction = true\n";
  expect_bit_identical(run("adamw", adam, 1), run("adamw", adam, 3));
  const std::string sgd = "momentum = 0.9\nnesterov = true\n";
  expect_bit_identical(run("sgd", sgd, 1), run("sgd", sgd, 2));
}

}  // namespace
