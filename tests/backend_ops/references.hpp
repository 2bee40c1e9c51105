// The float64 side of the comparisons: seeded random inputs, central differences of a float64
// reference function, and the scalar loss Σ w·y whose gradient seeds every backward (dy = w). Each
// family's own float64 reference (GELU, softmax, LayerNorm, ...) lives in that family's file.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace loom_backend_ops {

/// `n` uniform values in [lo, hi), reproducible for a given seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(engine);
  return v;
}

/// `n` ids uniform in [0, vocab), reproducible for a given seed.
inline std::vector<int64_t> random_ids(size_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int64_t> dist(0, vocab - 1);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = dist(engine);
  return ids;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// Central-difference gradient of `f` at `x` (all in float64).
inline std::vector<double> numeric_gradient(const std::function<double(const std::vector<double>&)>& f,
                                            std::vector<double> x, double h = 1e-6) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f(x);
    x[i] = saved - h;
    const double down = f(x);
    x[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

/// Σ w·y: the scalar whose gradient with respect to y is w.
inline double weighted_sum(const std::vector<double>& y, const std::vector<float>& w) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * w[i];
  return s;
}

/// `v` plus `shift` everywhere: what an ACCUMULATE op adds onto a prior content of `shift`.
inline std::vector<double> plus(std::vector<double> v, double shift) {
  for (double& x : v) x += shift;
  return v;
}

}  // namespace loom_backend_ops
