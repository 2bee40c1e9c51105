// Latency statistics; see latency_summary.hpp.
#include "eval/latency_summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace loom::host {

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no samples");
  if (!(q >= 0.0 && q <= 100.0))
    throw std::invalid_argument("percentile " + std::to_string(q) + " is outside [0, 100]");
  const double h = static_cast<double>(sorted.size() - 1) * q / 100.0;
  const auto below = static_cast<size_t>(std::floor(h));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = h - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

LatencySummary summarize_latencies(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("latency statistics of no samples");
  std::sort(samples.begin(), samples.end());
  LatencySummary s;
  s.count = samples.size();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = percentile_of_sorted(samples, 50);
  s.p90 = percentile_of_sorted(samples, 90);
  s.p99 = percentile_of_sorted(samples, 99);
  return s;
}

}  // namespace loom::host
