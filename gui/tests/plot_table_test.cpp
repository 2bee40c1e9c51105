// The plot table is the one place a plot is declared: the grid derived from it holds every plot
// exactly once, kPlottedFields is exactly its fields, RunHistory keeps a series for each of them,
// and every entry is one the dashboard and the screenshot check can draw and see.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "plot_table.hpp"
#include "run_history.hpp"

namespace loom::dash {
namespace {

// Every index of a `count`-plot grid lands in its own cell inside the grid, no row is empty, and
// the cells fill the grid row by row.
void expect_grid_holds_each_plot_once(size_t count, size_t columns) {
  const PlotGrid grid = plot_grid(count, columns);
  EXPECT_EQ(grid.columns, columns);
  std::vector<std::vector<int>> seen(grid.rows, std::vector<int>(grid.columns, 0));
  for (size_t i = 0; i < count; ++i) {
    const PlotGrid::Cell cell = grid.cell(i);
    ASSERT_LT(cell.row, grid.rows) << "plot " << i << " of " << count;
    ASSERT_LT(cell.column, grid.columns) << "plot " << i << " of " << count;
    EXPECT_EQ(cell.row * grid.columns + cell.column, i) << "not row by row";
    ++seen[cell.row][cell.column];
  }
  size_t filled = 0;
  for (size_t row = 0; row < grid.rows; ++row) {
    const auto used = static_cast<size_t>(std::count(seen[row].begin(), seen[row].end(), 1));
    EXPECT_GT(used, 0u) << "row " << row << " of a " << count << "-plot grid is empty";
    for (int times : seen[row]) EXPECT_LE(times, 1) << "two plots in one cell, row " << row;
    filled += used;
  }
  EXPECT_EQ(filled, count);
}

TEST(PlotTable, GridHoldsEveryPlotExactlyOnce) {
  expect_grid_holds_each_plot_once(kPlotCount, kPlotColumns);
  EXPECT_EQ(plot_grid(kPlotCount).rows, (kPlotCount + kPlotColumns - 1) / kPlotColumns);
  // A table one entry longer (or shorter) still gets a grid with a cell per plot.
  for (size_t count : {size_t{1}, size_t{2}, size_t{5}, size_t{7}, size_t{9}}) {
    expect_grid_holds_each_plot_once(count, kPlotColumns);
    expect_grid_holds_each_plot_once(count, 3);
  }
  EXPECT_EQ(plot_grid(7).rows, 4u);
  EXPECT_EQ(plot_grid(6).rows, 3u);
}

TEST(PlotTable, CellsAndGapsFillTheRegion) {
  const PlotGrid grid = plot_grid(kPlotCount);
  const float width = 1251, height = 983, gap = 8;
  const float cell_w = plot_cell_extent(width, grid.columns, gap),
              cell_h = plot_cell_extent(height, grid.rows, gap);
  EXPECT_GT(cell_w, 0);
  EXPECT_GT(cell_h, 0);
  EXPECT_FLOAT_EQ(cell_w * static_cast<float>(grid.columns) + gap * static_cast<float>(grid.columns - 1),
                  width);
  EXPECT_FLOAT_EQ(cell_h * static_cast<float>(grid.rows) + gap * static_cast<float>(grid.rows - 1), height);
  EXPECT_FLOAT_EQ(plot_cell_extent(100, 1, gap), 100);
}

TEST(PlotTable, PlottedFieldsAreExactlyTheTablesFields) {
  std::vector<std::string> table_fields;
  for (const PlotEntry& plot : kPlots)
    for (size_t l = 0; l < plot.line_count(); ++l)
      if (std::find(table_fields.begin(), table_fields.end(), plot.lines[l].field) == table_fields.end())
        table_fields.push_back(plot.lines[l].field);
  const std::vector<std::string> plotted(kPlottedFields.begin(), kPlottedFields.end());
  EXPECT_EQ(plotted, table_fields);
  EXPECT_EQ(std::set<std::string>(plotted.begin(), plotted.end()).size(), plotted.size()) << "a field twice";
}

TEST(PlotTable, EntriesAreDrawableAndVisibleToTheScreenshotCheck) {
  std::set<std::string> titles;
  for (const PlotEntry& plot : kPlots) {
    ASSERT_NE(plot.title, nullptr);
    const std::string title = plot.title;
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(titles.insert(title).second) << "two plots titled '" << title << "' (ImGui ids, the layout)";
    ASSERT_NE(plot.y_label, nullptr) << title;
    EXPECT_GE(plot.line_count(), 1u) << title << " draws nothing";
    for (size_t l = plot.line_count(); l < plot.lines.size(); ++l)
      EXPECT_EQ(plot.lines[l].field, nullptr) << title << ": a line after an unused slot is never drawn";
    for (size_t l = 0; l < plot.line_count(); ++l) {
      const PlotLineEntry& line = plot.lines[l];
      ASSERT_NE(line.label, nullptr) << title << " line " << l;
      const int spread = std::max({line.color.r, line.color.g, line.color.b}) -
                         std::min({line.color.r, line.color.g, line.color.b});
      EXPECT_GT(spread, kDataColorSpread)
          << title << " / " << line.label << ": grey to the screenshot check, which would see no data";
    }
    EXPECT_EQ(plot.marks != PlotMarks::none, plot.marks_label != nullptr)
        << title << ": markers need a legend";
  }
}

TEST(PlotTable, RunHistoryKeepsASeriesForEveryPlottedField) {
  nlohmann::json record = {{"type", "train"}, {"step", 4}, {"step_ms", 12.5}, {"not_plotted", 1.0}};
  double value = 1;
  for (const char* field : kPlottedFields) record[field] = value++;
  RunHistory history;
  history.ingest(record, 0);
  std::set<std::string> kept;
  for (const auto& [field, series] : history.series) {
    kept.insert(field);
    EXPECT_EQ(series.step, std::vector<double>{4}) << field;
    ASSERT_EQ(series.value.size(), 1u) << field;
    EXPECT_EQ(series.value[0], record[field].get<double>()) << field;
  }
  std::set<std::string> expected(kPlottedFields.begin(), kPlottedFields.end());
  expected.insert(std::begin(kPanelFields), std::end(kPanelFields));
  EXPECT_EQ(kept, expected);
}

}  // namespace
}  // namespace loom::dash
