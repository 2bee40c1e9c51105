// Dashboard: loom-dash's window contents — the panels on the left (run info, per-rank step time,
// alerts, controls with confirmation, smoothing) and the grid of plots (kPlots, plot_table.hpp) —
// drawn from a RunHistory each frame.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "alert_rules.hpp"
#include "plot.hpp"
#include "plot_table.hpp"
#include "run_history.hpp"
#include "run_source.hpp"

namespace loom::dash {

class Dashboard {
 public:
  explicit Dashboard(RunSource& source) : source_(source) {}

  /// Turns the hover read-out off (screenshots).
  void disable_hover() { view_.hover = false; }

  /// Takes the source's new messages (`now`: seconds on the dashboard's clock).
  void update(double now);
  /// Draws the whole window content into the current ImGui frame.
  void draw(double now);

  /// Each plot's title and area (screen pixels) as drawn last frame, for --layout.
  struct PlacedPlot {
    std::string title;
    PlotRect area;
  };
  const std::vector<PlacedPlot>& placed_plots() const { return placed_; }
  const RunHistory& history() const { return history_; }

 private:
  void draw_run_panel();
  void draw_rank_panel();
  void draw_alerts_panel(double now);
  void draw_controls_panel();
  void draw_plots(ImVec2 size);
  /// A kPlots entry (plot_table.hpp) bound to this run's series.
  PlotSpec plot_spec(const PlotEntry& entry);
  PlotLine line(const PlotLineEntry& entry);

  RunSource& source_;
  RunHistory history_;
  PlotView view_;
  float smoothing_ = 0.6f;
  int confirming_ = -1;  // the RunCommand awaiting confirmation, -1 for none
  std::vector<PlacedPlot> placed_;
  struct Smoothed {
    size_t points = 0;
    float weight = -1;
    std::vector<double> values;
  };
  std::map<std::string, Smoothed> smoothed_;  // by field
};

}  // namespace loom::dash
