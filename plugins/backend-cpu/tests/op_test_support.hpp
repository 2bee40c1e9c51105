// Shared pieces of backend-cpu's own tests (what every backend's ops compute is tested in
// tests/backend_ops): views of std::vectors and f16 copies, with the harness's seeded random data
// and closeness check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend_ops/checks.hpp"
#include "backend_ops/references.hpp"
#include "cpu_backend.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_cpu_test {

/// A contiguous CPU view of `v` with `shape` (the vector must hold exactly numel elements).
template <typename T>
loom::Tensor view(std::vector<T>& v, std::initializer_list<int64_t> shape) {
  loom::Tensor t = loom::Tensor::contiguous(v.data(), loom::dtype_of<T>(), shape);
  EXPECT_EQ(static_cast<size_t>(t.numel()), v.size()) << "test bug: view shape does not match the vector";
  return t;
}

/// Seeded data: the backend-ops harness's (tests/backend_ops/references.hpp).
using loom_backend_ops::random_floats;

/// Expects |actual − expected| ≤ atol + rtol·|expected| everywhere; reports the worst element (the
/// harness's check, tests/backend_ops/checks.hpp).
template <typename A, typename E>
void expect_close(const std::vector<A>& actual, const std::vector<E>& expected, double rtol, double atol,
                  const std::string& what) {
  loom_backend_ops::expect_close(actual, expected, loom_backend_ops::Tolerance{rtol, atol}, what);
}

/// 16-bit copies (loom::BFloat16 or loom::Half) of f32 values, rounded to nearest even.
template <typename Half16>
std::vector<Half16> to_16bit(const std::vector<float>& v) {
  std::vector<Half16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<Half16, loom::Half>)
      out[i] = loom::to_f16(v[i]);
    else
      out[i] = loom::to_bf16(v[i]);
  }
  return out;
}
/// f32 values of 16-bit data (exact).
template <typename Half16>
std::vector<float> from_16bit(const std::vector<Half16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = loom::to_f32(v[i]);
  return out;
}
inline std::vector<loom::Half> to_f16(const std::vector<float>& v) {
  return to_16bit<loom::Half>(v);
}
inline std::vector<float> from_f16(const std::vector<loom::Half>& v) {
  return from_16bit(v);
}

/// The backend most tests use: two threads, so parallel paths run even on small shapes.
inline loom_cpu::CpuBackend& backend() {
  static loom_cpu::CpuBackend instance(2);
  return instance;
}

}  // namespace loom_cpu_test
