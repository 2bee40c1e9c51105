// loom_dash_screenshot_check SCREENSHOT.png LAYOUT.json [MIN_PIXELS]: checks a loom-dash screenshot
// against the plot table (plot_table.hpp): the layout lists every plot of kPlots, in table order,
// each in its grid cell (plots of a row level with each other, of a column aligned, rows and columns
// in order without overlap, all inside the image), and every plot holds drawn data. The plot
// background, grid, frame and text are all grey, and every series colour is saturated, so a data
// pixel is one whose channels differ by more than kDataColorSpread. Only the left half of each plot
// is counted: the legend's colour swatches sit at the top right.
// Prints one line per plot; exits 1 when the layout does not follow the table or a plot has fewer
// than MIN_PIXELS (default 150) data pixels.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plot_table.hpp"
#include "png_file.hpp"

namespace {

using loom::dash::kPlotCount;
using loom::dash::kPlots;

struct Rect {
  std::string title;
  int x0, y0, x1, y1;
};

// Problems with where the plots sit, one line each; empty when the layout follows the table.
std::vector<std::string> layout_problems(const std::vector<Rect>& plots, int width, int height) {
  std::vector<std::string> problems;
  if (plots.size() != kPlotCount) {
    problems.push_back(
        fmt::format("the table declares {} plots, the layout holds {}", kPlotCount, plots.size()));
    return problems;
  }
  constexpr loom::dash::PlotGrid grid = loom::dash::plot_grid(kPlotCount);
  for (size_t i = 0; i < kPlotCount; ++i) {
    const Rect& a = plots[i];
    const std::string name = fmt::format("plot {} '{}'", i, a.title);
    if (a.title != kPlots[i].title)
      problems.push_back(fmt::format("{}: the table's plot {} is '{}'", name, i, kPlots[i].title));
    if (a.x0 < 0 || a.y0 < 0 || a.x1 > width || a.y1 > height || a.x0 >= a.x1 || a.y0 >= a.y1)
      problems.push_back(name + ": not an area inside the image");
    const auto cell = grid.cell(i);
    for (size_t j = 0; j < i; ++j) {
      const Rect& b = plots[j];
      const auto other = grid.cell(j);
      const std::string pair = fmt::format("{} and plot {} '{}'", name, j, b.title);
      if (other.row == cell.row && (a.y0 != b.y0 || a.y1 != b.y1))
        problems.push_back(pair + ": one row, not level");
      if (other.column == cell.column && (a.x0 != b.x0 || a.x1 != b.x1))
        problems.push_back(pair + ": one column, not aligned");
      if (other.row == cell.row && other.column + 1 == cell.column && b.x1 >= a.x0)
        problems.push_back(pair + ": not side by side, left to right");
      if (other.column == cell.column && other.row + 1 == cell.row && b.y1 >= a.y0)
        problems.push_back(pair + ": not one above the other");
    }
  }
  return problems;
}

// Saturated pixels in the left half of the plot area (a 2-pixel inset keeps the frame out).
long data_pixels(const loom::dash::RgbImage& image, const Rect& plot, std::string* region) {
  const int x0 = plot.x0 + 2, y0 = plot.y0 + 2, x1 = (plot.x0 + plot.x1) / 2, y1 = plot.y1 - 2;
  *region = fmt::format("[{},{})-[{},{})", x0, y0, x1, y1);
  long drawn = 0;
  for (int y = std::max(0, y0); y < std::min(image.height, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(image.width, x1); ++x) {
      const uint8_t* p = &image.pixels[(static_cast<size_t>(y) * image.width + x) * 3];
      const int spread = std::max({p[0], p[1], p[2]}) - std::min({p[0], p[1], p[2]});
      drawn += spread > loom::dash::kDataColorSpread;
    }
  return drawn;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: loom_dash_screenshot_check SCREENSHOT.png LAYOUT.json [MIN_PIXELS]\n";
    return 2;
  }
  const long min_pixels = argc > 3 ? std::atol(argv[3]) : 150;
  try {
    const loom::dash::RgbImage image = loom::dash::read_png(argv[1]);
    std::ifstream layout_file(argv[2]);
    const nlohmann::json layout = nlohmann::json::parse(layout_file);
    if (layout.at("width") != image.width || layout.at("height") != image.height) {
      std::cerr << "the layout is for " << layout["width"] << "x" << layout["height"] << ", the PNG is "
                << image.width << "x" << image.height << "\n";
      return 1;
    }
    std::vector<Rect> plots;
    for (const auto& plot : layout.at("plots"))
      plots.push_back({plot.at("title").get<std::string>(), plot.at("x0").get<int>(),
                       plot.at("y0").get<int>(), plot.at("x1").get<int>(), plot.at("y1").get<int>()});
    const std::vector<std::string> problems = layout_problems(plots, image.width, image.height);
    for (const std::string& problem : problems) std::cerr << "layout: " << problem << "\n";
    if (!problems.empty()) return 1;
    int failures = 0;
    for (const Rect& plot : plots) {
      std::string region;
      const long drawn = data_pixels(image, plot, &region);
      const bool ok = drawn >= min_pixels;
      failures += !ok;
      std::cout << (ok ? "ok   " : "FAIL ") << plot.title << ": " << drawn << " data pixels in " << region
                << "\n";
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "loom_dash_screenshot_check " << argv[1] << " " << argv[2] << ": " << e.what() << "\n";
    return 1;
  }
}
