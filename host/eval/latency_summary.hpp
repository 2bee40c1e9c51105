// Latency statistics of repeated timings, as `loom bench --inference` reports them: count, mean,
// min, max and the 50th/90th/99th percentiles.
//
// Percentiles interpolate linearly between the closest ranks (Hyndman & Fan's definition 7, NumPy's
// default `numpy.percentile(x, q)`): of n sorted samples x₀ ≤ … ≤ xₙ₋₁, the q-th percentile is
// x_⌊h⌋ + (h − ⌊h⌋)·(x_⌊h⌋₊₁ − x_⌊h⌋) with h = (n − 1)·q/100. So p0 is the minimum, p100 the
// maximum, p50 the usual median, and one sample is every percentile. With few samples the upper
// percentiles lie between the largest ones (p99 of 20 samples is x₁₈ + 0.81·(x₁₉ − x₁₈)); the
// PyTorch side of scripts/bench/compare-pytorch computes the same definition with NumPy.
#pragma once

#include <cstddef>
#include <vector>

namespace loom::host {

/// The q-th percentile (0 ≤ q ≤ 100) of `sorted` (ascending). Throws std::invalid_argument when
/// `sorted` is empty or q is outside [0, 100] (or NaN).
double percentile_of_sorted(const std::vector<double>& sorted, double q);

struct LatencySummary {
  size_t count = 0;
  double mean = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p99 = 0;
};

/// Statistics of `samples` (any order, any unit; the result is in the same unit). Throws
/// std::invalid_argument when `samples` is empty.
LatencySummary summarize_latencies(std::vector<double> samples);

}  // namespace loom::host
