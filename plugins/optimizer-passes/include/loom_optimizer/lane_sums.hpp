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

/// Calls `element(k, lane)` for k in [0, n) with lane = k mod 8 counted from the last whole group
/// of 8 (the order every block loop of the optimizers uses).
template <typename Element>
inline void for_each_in_lanes(size_t n, const Element& element) {
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) element(i + j, j);
  for (size_t i = whole; i < n; ++i) element(i, i - whole);
}

/// Σ x[i]² over [0, n), accumulated in double.
inline double sum_of_squares(const float* __restrict x, size_t n) {
  LaneSums sums;
  for_each_in_lanes(n, [&](size_t k, size_t lane) {
    const double value = x[k];
    sums.lane[lane] += value * value;
  });
  return sums.total();
}

}  // namespace loom_optimizer
