// The dashboard's plots, declared once: kPlots lists each plot (title, y-axis label and scale, the
// record fields it draws with their legend label, colour and style, the step markers along its
// bottom) in the order they fill the grid, row by row, kPlotColumns wide. Everything else follows
// from the table: the grid's rows, the drawing loop, the record fields RunHistory keeps as series
// (kPlottedFields) and what the screenshot test expects. Adding a plot is one entry in kPlots.
// Plain data (no ImGui) so that RunHistory and the tests read it without a window.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loom::dash {

/// A line's colour (opaque).
struct PlotColor {
  uint8_t r = 0, g = 0, b = 0;
};

inline constexpr PlotColor kBlue{90, 170, 255}, kOrange{255, 160, 60}, kGreen{110, 210, 120},
    kPink{240, 100, 170}, kRed{255, 80, 80}, kYellow{240, 220, 90};

/// Plot backgrounds, grids, frames and text are grey; every data colour's channels differ by more
/// than this, which is how the screenshot test tells drawn data from the rest.
inline constexpr int kDataColorSpread = 40;

/// One line of a plot: a record field over steps.
struct PlotLineEntry {
  const char* label = nullptr;  ///< legend text
  const char* field = nullptr;  ///< the train (or eval) record field
  PlotColor color{};
  bool smooth = true;   ///< follows the smoothing slider (loss scale and learning rate never do)
  bool points = false;  ///< a circle per point rather than a line (sparse series: evaluations)
};

/// Steps marked along a plot's bottom edge.
enum class PlotMarks { none, skipped_steps };

/// Room for lines in one entry (a fixed array keeps the table constexpr); raise it for a plot with more.
inline constexpr size_t kMaxLinesPerPlot = 4;

struct PlotEntry {
  const char* title = nullptr;
  const char* y_label = nullptr;
  bool log2_y = false;
  /// The lines in legend order; unused slots have no field.
  std::array<PlotLineEntry, kMaxLinesPerPlot> lines{};
  PlotMarks marks = PlotMarks::none;
  const char* marks_label = nullptr;  ///< legend text of the markers
  PlotColor marks_color{};

  constexpr size_t line_count() const {
    size_t n = 0;
    while (n < lines.size() && lines[n].field != nullptr) ++n;
    return n;
  }
};

inline constexpr PlotEntry kPlots[] = {
    {.title = "loss",
     .y_label = "loss",
     .lines = {{{.label = "total", .field = "loss", .color = kBlue},
                {.label = "MLM", .field = "mlm_loss", .color = kOrange},
                {.label = "NSP", .field = "nsp_loss", .color = kGreen},
                {.label = "eval", .field = "eval_loss", .color = kYellow, .smooth = false, .points = true}}}},
    {.title = "loss scale (log2 axis)",
     .y_label = "scale",
     .log2_y = true,
     .lines = {{{.label = "loss scale", .field = "loss_scale", .color = kPink, .smooth = false}}},
     .marks = PlotMarks::skipped_steps,
     .marks_label = "| skipped step",
     .marks_color = kRed},
    {.title = "learning rate",
     .y_label = "lr",
     .lines = {{{.label = "lr", .field = "lr", .color = kGreen, .smooth = false}}}},
    {.title = "gradient norm",
     .y_label = "norm",
     .lines = {{{.label = "grad norm", .field = "grad_norm", .color = kOrange}}}},
    {.title = "throughput: sequences/s",
     .y_label = "seq/s",
     .lines = {{{.label = "sequences/s", .field = "sequences_per_second", .color = kBlue}}}},
    {.title = "throughput: tokens/s",
     .y_label = "tok/s",
     .lines = {{{.label = "tokens/s", .field = "tokens_per_second", .color = kYellow}}}},
};

inline constexpr size_t kPlotCount = std::size(kPlots);
inline constexpr size_t kPlotColumns = 2;

/// Where plot `index` of `count` sits in a grid `columns` wide, filled row by row.
struct PlotGrid {
  size_t rows = 0, columns = 0;
  struct Cell {
    size_t row = 0, column = 0;
  };
  constexpr Cell cell(size_t index) const { return {index / columns, index % columns}; }
};

constexpr PlotGrid plot_grid(size_t count, size_t columns = kPlotColumns) {
  return {(count + columns - 1) / columns, columns};
}

/// One cell's width (or height) when `cells` cells with `gap` pixels between them fill `extent`.
constexpr float plot_cell_extent(float extent, size_t cells, float gap) {
  return (extent - gap * static_cast<float>(cells - 1)) / static_cast<float>(cells);
}

namespace plot_table_detail {

// The distinct fields of kPlots in table order; returns how many (at most kMaxFields).
inline constexpr size_t kMaxFields = kPlotCount * kMaxLinesPerPlot;
constexpr size_t distinct_fields(std::array<const char*, kMaxFields>* out) {
  size_t n = 0;
  for (const PlotEntry& plot : kPlots)
    for (size_t l = 0; l < plot.line_count(); ++l) {
      bool seen = false;
      for (size_t i = 0; i < n; ++i) seen = seen || std::string_view((*out)[i]) == plot.lines[l].field;
      if (!seen) (*out)[n++] = plot.lines[l].field;
    }
  return n;
}

constexpr size_t distinct_field_count() {
  std::array<const char*, kMaxFields> fields{};
  return distinct_fields(&fields);
}

}  // namespace plot_table_detail

/// The record fields the plots draw, each once, in table order: RunHistory keeps these as series.
inline constexpr auto kPlottedFields = [] {
  std::array<const char*, plot_table_detail::kMaxFields> all{};
  plot_table_detail::distinct_fields(&all);
  std::array<const char*, plot_table_detail::distinct_field_count()> fields{};
  for (size_t i = 0; i < fields.size(); ++i) fields[i] = all[i];
  return fields;
}();

}  // namespace loom::dash
