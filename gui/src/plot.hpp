// Plot: one line chart drawn with ImGui's ImDrawList (Debian's Dear ImGui 1.86 has no ImPlot):
// frame, grid, tick labels on both axes, axis labels, a legend, min/max-downsampled lines (so
// 200,000 points cost as much as the plot is wide), point and tick markers, and a hover read-out.
// The x (step) range is shared by every plot through PlotView: the mouse wheel zooms around the
// cursor, dragging pans, a double click goes back to following the whole run. y fits what is
// visible; a log2 y axis is available (loss scale).
#pragma once

#include <string>
#include <vector>

#include <imgui.h>

#include "run_history.hpp"

namespace loom::dash {

/// The shared x range. `follow`: show everything (and keep up with new steps).
struct PlotView {
  bool follow = true;
  bool hover = true;  ///< hover read-out (off for --screenshot: the pointer of a virtual display is arbitrary)
  double x_min = 0, x_max = 1;
};

struct PlotLine {
  std::string label;
  const Series* series = nullptr;  ///< null or empty: listed in the legend as "(none)"
  const std::vector<double>* values = nullptr;  ///< the y drawn (smoothed or raw), as long as series->step
  ImU32 color = 0;
  bool points = false;             ///< draw a circle per point (sparse series: evaluations)
};

struct PlotSpec {
  std::string title;
  std::string y_label;
  bool log2_y = false;
  std::vector<PlotLine> lines;
  const std::vector<double>* tick_marks = nullptr;  ///< steps marked along the bottom (skipped steps)
  std::string tick_label;
  ImU32 tick_color = 0;
};

/// A rectangle in screen pixels.
struct PlotRect {
  ImVec2 min, max;
};

/// Draws `spec` into a `size` region at the cursor; returns the plot area (inside the axes) in
/// screen pixels.
PlotRect draw_plot(const char* id, const PlotSpec& spec, PlotView& view, ImVec2 size);

/// "Nice" tick positions (1, 2, 5 × 10^k) covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);

}  // namespace loom::dash
