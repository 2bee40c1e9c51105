// Debiased exponential moving average; see smoothing.hpp.
#include "smoothing.hpp"

#include <algorithm>
#include <cmath>

namespace loom::dash {

std::vector<double> smooth_ema(const std::vector<double>& y, double weight) {
  weight = std::clamp(weight, 0.0, 0.999999);
  std::vector<double> out(y.size());
  double average = 0, debias = 1;  // debias = weight^k after k finite values
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    average = average * weight + (1 - weight) * y[i];
    debias *= weight;
    out[i] = weight == 0 ? y[i] : average / (1 - debias);
  }
  return out;
}

}  // namespace loom::dash
