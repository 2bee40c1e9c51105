// Line plots with ImDrawList; see plot.hpp.
#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "downsample.hpp"

namespace loom::dash {
namespace {

constexpr float kLeftMargin = 64, kBottomMargin = 34, kTopMargin = 24, kRightMargin = 12;
const ImU32 kFrameColor = IM_COL32(140, 140, 150, 255);
const ImU32 kGridColor = IM_COL32(70, 70, 80, 255);
const ImU32 kPlotBackground = IM_COL32(24, 24, 30, 255);
const ImU32 kTextColor = IM_COL32(220, 220, 225, 255);

std::string tick_text(double value, bool log2) {
  if (log2) return fmt::format("2^{:g}", value);
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e5 || magnitude < 1e-3) return fmt::format("{:.1e}", value);
  return fmt::format("{:g}", value);
}

// y range over the visible part of every line (in log2 space when asked).
std::pair<double, double> visible_y_range(const PlotSpec& spec, double x_min, double x_max) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const PlotLine& line : spec.lines) {
    if (line.series == nullptr) continue;
    const auto& x = line.series->step;
    const auto begin = std::lower_bound(x.begin(), x.end(), x_min);
    const auto end = std::upper_bound(begin, x.end(), x_max);
    for (auto it = begin; it != end; ++it) {
      double v = (*line.values)[static_cast<size_t>(it - x.begin())];
      if (spec.log2_y) v = v > 0 ? std::log2(v) : std::numeric_limits<double>::quiet_NaN();
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (!std::isfinite(lo)) return {0, 1};
  // A flat line smoothed differs in the last bits: treat a spread under 1e-9 of the value as flat.
  const bool flat = hi - lo <= 1e-9 * std::max(std::fabs(lo), std::fabs(hi));
  const double pad = !flat ? 0.06 * (hi - lo) : (spec.log2_y ? 1.0 : std::max(1e-3, 0.1 * std::fabs(lo)));
  return {lo - pad, hi + pad};
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || target < 1) return ticks;
  const double raw = (hi - lo) / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (raw <= factor * power * (1 + 1e-9)) {  // 0.6 / 3 must pick 0.2, not 0.5
      step = factor * power;
      break;
    }
  // Counted, not accumulated: t += step never moves when step is below t's precision.
  const double first = std::ceil(lo / step);
  for (int i = 0; i <= 4 * target + 4; ++i) {
    const double t = (first + i) * step;
    if (t > hi + 1e-9 * step) break;
    ticks.push_back(std::fabs(t) < 1e-12 * step ? 0.0 : t);
  }
  return ticks;
}

PlotRect draw_plot(const char* id, const PlotSpec& spec, PlotView& view, ImVec2 size) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  const bool hovered = ImGui::IsItemHovered();
  const PlotRect area{{origin.x + kLeftMargin, origin.y + kTopMargin},
                      {origin.x + size.x - kRightMargin, origin.y + size.y - kBottomMargin}};
  const float width = area.max.x - area.min.x, height = area.max.y - area.min.y;
  if (width < 10 || height < 10) return area;

  // x range: everything (follow) or the user's zoom.
  if (view.follow) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const PlotLine& line : spec.lines)
      if (line.series != nullptr && !line.series->step.empty())
        lo = std::min(lo, line.series->step.front()), hi = std::max(hi, line.series->step.back());
    if (std::isfinite(lo) && hi > lo) view.x_min = lo, view.x_max = hi;
  }
  const double x_min = view.x_min, x_max = std::max(view.x_max, view.x_min + 1e-9);
  const auto [y_min, y_max] = visible_y_range(spec, x_min, x_max);
  auto to_x = [&](double x) { return area.min.x + static_cast<float>((x - x_min) / (x_max - x_min)) * width; };
  auto to_y = [&](double y) { return area.max.y - static_cast<float>((y - y_min) / (y_max - y_min)) * height; };
  auto from_x = [&](float px) { return x_min + (px - area.min.x) / width * (x_max - x_min); };

  // Zoom (wheel, around the cursor) and pan (drag) on the shared x range.
  const ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) {
    const double anchor = from_x(io.MousePos.x), factor = std::pow(0.85, io.MouseWheel);
    view.follow = false;
    view.x_min = anchor - (anchor - x_min) * factor;
    view.x_max = anchor + (x_max - anchor) * factor;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left) && io.MouseDelta.x != 0) {
    const double shift = -io.MouseDelta.x / width * (x_max - x_min);
    view.follow = false;
    view.x_min += shift, view.x_max += shift;
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) view.follow = true;

  // Frame, grid and tick labels.
  draw->AddRectFilled(area.min, area.max, kPlotBackground);
  for (double t : nice_ticks(x_min, x_max, std::max(2, static_cast<int>(width / 110)))) {
    const float px = to_x(t);
    draw->AddLine({px, area.min.y}, {px, area.max.y}, kGridColor);
    const std::string text = tick_text(t, false);
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    draw->AddText({px - w / 2, area.max.y + 3}, kTextColor, text.c_str());
  }
  std::vector<double> y_ticks = nice_ticks(y_min, y_max, std::max(2, static_cast<int>(height / 45)));
  if (spec.log2_y) {  // whole powers of two
    std::vector<double> powers;
    for (double t : y_ticks)
      if (t == std::floor(t)) powers.push_back(t);
    if (powers.empty()) powers.push_back(std::round((y_min + y_max) / 2));
    y_ticks = powers;
  }
  for (double t : y_ticks) {
    const float py = to_y(t);
    if (py < area.min.y - 1 || py > area.max.y + 1) continue;
    draw->AddLine({area.min.x, py}, {area.max.x, py}, kGridColor);
    const std::string text = tick_text(t, spec.log2_y);
    const ImVec2 text_size = ImGui::CalcTextSize(text.c_str());
    draw->AddText({area.min.x - text_size.x - 5, py - text_size.y / 2}, kTextColor, text.c_str());
  }
  draw->AddRect(area.min, area.max, kFrameColor);
  draw->AddText({area.min.x, origin.y + 3}, kTextColor, spec.title.c_str());
  const std::string x_label = "step";
  draw->AddText({area.max.x - ImGui::CalcTextSize(x_label.c_str()).x, area.max.y + 17}, kTextColor, x_label.c_str());
  draw->AddText({origin.x + 2, area.max.y + 17}, kTextColor, spec.y_label.c_str());

  // Lines: at most four vertices per pixel column.
  draw->PushClipRect(area.min, area.max, true);
  std::vector<ImVec2> polyline;
  for (const PlotLine& line : spec.lines) {
    if (line.series == nullptr || line.series->step.empty()) continue;
    if (line.points) {
      for (size_t i = 0; i < line.series->step.size(); ++i) {
        double v = (*line.values)[i];
        if (spec.log2_y) v = v > 0 ? std::log2(v) : std::numeric_limits<double>::quiet_NaN();
        if (std::isfinite(v)) draw->AddCircleFilled({to_x(line.series->step[i]), to_y(v)}, 4.0f, line.color);
      }
      continue;
    }
    const int columns = std::max(1, static_cast<int>(width));
    polyline.clear();
    for (const PixelColumn& c : downsample_min_max(line.series->step, *line.values, x_min, x_max, columns)) {
      auto y_of = [&](double v) { return to_y(spec.log2_y ? (v > 0 ? std::log2(v) : y_min) : v); };
      const float px = area.min.x + static_cast<float>(c.column) + 0.5f;
      for (double v : {c.first, c.min, c.max, c.last}) polyline.push_back({px, y_of(v)});
    }
    if (polyline.size() == 4) polyline.push_back({polyline.back().x + 1, polyline.back().y});
    draw->AddPolyline(polyline.data(), static_cast<int>(polyline.size()), line.color, ImDrawFlags_None, 1.6f);
  }
  if (spec.tick_marks != nullptr)
    for (double step : *spec.tick_marks)
      if (step >= x_min && step <= x_max)
        draw->AddLine({to_x(step), area.max.y - 10}, {to_x(step), area.max.y}, spec.tick_color, 2.0f);
  draw->PopClipRect();

  // Legend, top right inside the frame.
  float legend_y = area.min.y + 4;
  for (const PlotLine& line : spec.lines) {
    const bool empty = line.series == nullptr || line.series->step.empty();
    const std::string text = empty ? line.label + " (none)" : line.label;
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    draw->AddRectFilled({area.max.x - w - 22, legend_y + 4}, {area.max.x - w - 12, legend_y + 12}, line.color);
    draw->AddText({area.max.x - w - 6, legend_y}, kTextColor, text.c_str());
    legend_y += ImGui::GetTextLineHeight() + 1;
  }
  if (spec.tick_marks != nullptr && !spec.tick_marks->empty()) {
    const std::string text = fmt::format("{} ({})", spec.tick_label, spec.tick_marks->size());
    draw->AddText({area.max.x - ImGui::CalcTextSize(text.c_str()).x - 6, legend_y}, spec.tick_color, text.c_str());
  }

  // Hover read-out: the nearest point of each line to the cursor's step.
  if (view.hover && hovered && io.MousePos.x >= area.min.x && io.MousePos.x <= area.max.x) {
    draw->AddLine({io.MousePos.x, area.min.y}, {io.MousePos.x, area.max.y}, IM_COL32(255, 255, 255, 90));
    const double at = from_x(io.MousePos.x);
    ImGui::BeginTooltip();
    for (const PlotLine& line : spec.lines) {
      if (line.series == nullptr || line.series->step.empty()) continue;
      const auto& x = line.series->step;
      auto it = std::lower_bound(x.begin(), x.end(), at);
      if (it == x.end() || (it != x.begin() && at - *(it - 1) < *it - at)) --it;
      const size_t i = static_cast<size_t>(it - x.begin());
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(line.color), "%s: %.6g at step %.0f", line.label.c_str(),
                         (*line.values)[i], x[i]);
    }
    ImGui::EndTooltip();
  }
  return area;
}

}  // namespace loom::dash
