// Min/max downsampling per pixel column; see downsample.hpp.
#include "downsample.hpp"

#include <algorithm>
#include <cmath>

namespace loom::dash {

std::vector<PixelColumn> downsample_min_max(const std::vector<double>& x, const std::vector<double>& y, double x_min,
                                            double x_max, int columns) {
  std::vector<PixelColumn> out;
  if (columns <= 0 || !(x_max > x_min) || x.size() != y.size()) return out;
  const auto begin = std::lower_bound(x.begin(), x.end(), x_min);
  const auto end = std::upper_bound(begin, x.end(), x_max);
  const double per_column = static_cast<double>(columns) / (x_max - x_min);
  for (auto it = begin; it != end; ++it) {
    const double value = y[static_cast<size_t>(it - x.begin())];
    if (!std::isfinite(value)) continue;
    const int column = std::min(columns - 1, static_cast<int>((*it - x_min) * per_column));
    if (out.empty() || out.back().column != column) {
      out.push_back({column, value, value, value, value});
      continue;
    }
    PixelColumn& c = out.back();
    c.min = std::min(c.min, value);
    c.max = std::max(c.max, value);
    c.last = value;
  }
  return out;
}

}  // namespace loom::dash
