// loom_dash_screenshot_check SCREENSHOT.png LAYOUT.json [MIN_PIXELS]: checks that every plot of a
// loom-dash screenshot holds drawn data. The plot background, grid, frame and text are all grey, and
// every series colour is saturated, so a data pixel is one whose channels differ by more than 40.
// Only the left half of each plot is counted: the legend's colour swatches sit at the top right.
// Prints one line per plot; exits 1 when a plot has fewer than MIN_PIXELS (default 150) such pixels.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "png_file.hpp"

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
    if (layout.at("plots").size() != 6) {
      std::cerr << "expected 6 plots in the layout, found " << layout["plots"].size() << "\n";
      return 1;
    }
    int failures = 0;
    for (const auto& plot : layout["plots"]) {
      const int x0 = plot.at("x0").get<int>() + 2, y0 = plot.at("y0").get<int>() + 2;
      const int x1 = (plot.at("x0").get<int>() + plot.at("x1").get<int>()) / 2, y1 = plot.at("y1").get<int>() - 2;
      long drawn = 0;
      for (int y = std::max(0, y0); y < std::min(image.height, y1); ++y)
        for (int x = std::max(0, x0); x < std::min(image.width, x1); ++x) {
          const uint8_t* p = &image.pixels[(static_cast<size_t>(y) * image.width + x) * 3];
          const int spread = std::max({p[0], p[1], p[2]}) - std::min({p[0], p[1], p[2]});
          drawn += spread > 40;
        }
      const bool ok = drawn >= min_pixels;
      failures += !ok;
      std::cout << (ok ? "ok   " : "FAIL ") << plot.at("title").get<std::string>() << ": " << drawn
                << " data pixels in [" << x0 << "," << y0 << ")-[" << x1 << "," << y1 << ")\n";
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "loom_dash_screenshot_check: " << e.what() << "\n";
    return 1;
  }
}
