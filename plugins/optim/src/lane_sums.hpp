// LaneSums: the fixed-order double accumulation every optimizer reduction uses.
//
// Element i of a block is added to lane i mod 8 and the lanes are combined in one fixed tree, so a
// block's sum is a pure function of its elements; the 8 independent lanes let the compiler keep
// the accumulation in vector registers without reassociating anything.
#pragma once

#include <cstddef>

namespace loom_optim {

inline constexpr size_t kLanes = 8;

struct LaneSums {
  double lane[kLanes] = {};
  double total() const {
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
};

/// Σ x[i]² over [0, n), accumulated in double.
inline double sum_of_squares(const float* __restrict x, size_t n) {
  LaneSums sums;
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const double value = x[i + j];
      sums.lane[j] += value * value;
    }
  for (size_t i = whole; i < n; ++i) {
    const double value = x[i];
    sums.lane[i - whole] += value * value;
  }
  return sums.total();
}

}  // namespace loom_optim
