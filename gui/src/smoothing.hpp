// Smoothing for noisy training curves: TensorBoard's debiased exponential moving average, so the
// slider means the same thing it means there (0: raw, 0.99: very smooth) and the first points are
// not pulled towards zero.
#pragma once

#include <vector>

namespace loom::dash {

/// y smoothed with weight in [0, 1); non-finite values pass through unsmoothed and do not poison
/// the average.
std::vector<double> smooth_ema(const std::vector<double>& y, double weight);

}  // namespace loom::dash
