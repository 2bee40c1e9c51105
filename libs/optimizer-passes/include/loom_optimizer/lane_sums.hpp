// LaneSums: the fixed-order double accumulation every optimizer reduction uses.
//
// Element i of a work block is added to lane i mod 8 and the lanes are combined in one fixed
// tree, so a block's sum is a pure function of its elements; the 8 independent lanes let the
// compiler keep the accumulation in vector registers without reassociating anything.
#pragma once

#include <cstddef>

namespace loom_optimizer {

inline constexpr size_t kLanes = 8;

struct LaneSums {
  double lane[kLanes] = {};
  double total() const {
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
};

// Every element loop of the passes puts element k of a block on lane k mod 8 over the whole groups
// of 8, then the tail on lanes 0, 1, ... Each pass writes the two loops out itself
// (`for i in groups: for j < 8: element(i + j, j)`, then the tail): handing the element function
// to a shared loop template keeps GCC from holding the lane sums in registers (30% slower).

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

}  // namespace loom_optimizer
