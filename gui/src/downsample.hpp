// Min/max downsampling: a series of any length drawn into a plot of W pixel columns becomes at most
// W vertical segments (each column's lowest and highest value) joined in order, which looks exactly
// like drawing every point — spikes survive — and costs O(W + log n) per frame for sorted x.
#pragma once

#include <cstddef>
#include <vector>

namespace loom::dash {

struct PixelColumn {
  int column = 0;      ///< 0 .. columns-1
  double min = 0;      ///< lowest finite y in the column
  double max = 0;      ///< highest finite y in the column
  double first = 0;    ///< y of the column's first point (joins the previous column)
  double last = 0;     ///< y of the column's last point (joins the next column)
};

/// The non-empty columns of the points with x in [x_min, x_max] (x ascending), mapped onto
/// `columns` equal-width columns. Non-finite y values are skipped.
std::vector<PixelColumn> downsample_min_max(const std::vector<double>& x, const std::vector<double>& y, double x_min,
                                            double x_max, int columns);

}  // namespace loom::dash
