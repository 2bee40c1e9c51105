// The dashboard's panels and plot grid; see dashboard.hpp.
#include "dashboard.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "message_fields.hpp"
#include "metrics/metrics_log.hpp"
#include "plot_table.hpp"
#include "smoothing.hpp"

namespace loom::dash {
namespace {

using loom::host::RunCommand;

ImU32 im_color(PlotColor color) { return IM_COL32(color.r, color.g, color.b, 255); }

// Pixels between grid cells: ImGui's item spacing across (8); down, its 4 plus slack, which keeps
// the last row clear of the window's bottom edge.
constexpr float kPlotGap = 8;

void heading(const char* text) {
  ImGui::Spacing();
  ImGui::TextColored({0.55f, 0.75f, 1.0f, 1.0f}, "%s", text);
  ImGui::Separator();
}

}  // namespace

void Dashboard::update(double now) {
  std::vector<nlohmann::json> messages;
  source_.drain(messages);
  for (const auto& message : messages) history_.ingest(message, now);
}

PlotLine Dashboard::line(const PlotLineEntry& entry) {
  PlotLine out;
  out.label = entry.label;
  out.color = im_color(entry.color);
  out.points = entry.points;
  const auto it = history_.series.find(entry.field);
  if (it == history_.series.end()) return out;
  out.series = &it->second;
  out.values = &it->second.value;
  if (!entry.smooth || smoothing_ <= 0) return out;
  // Smoothed once per new record or slider move, not per frame (200,000-point series).
  Smoothed& cached = smoothed_[entry.field];
  if (cached.points != it->second.value.size() || cached.weight != smoothing_) {
    cached.values = smooth_ema(it->second.value, smoothing_);
    cached.points = it->second.value.size();
    cached.weight = smoothing_;
  }
  out.values = &cached.values;
  return out;
}

PlotSpec Dashboard::plot_spec(const PlotEntry& entry) {
  PlotSpec spec;
  spec.title = entry.title;
  spec.y_label = entry.y_label;
  spec.log2_y = entry.log2_y;
  for (size_t i = 0; i < entry.line_count(); ++i) spec.lines.push_back(line(entry.lines[i]));
  switch (entry.marks) {
    case PlotMarks::none:
      break;
    case PlotMarks::skipped_steps:
      spec.tick_marks = &history_.skipped_steps;
      break;
  }
  if (entry.marks != PlotMarks::none) {
    spec.tick_label = entry.marks_label;
    spec.tick_color = im_color(entry.marks_color);
  }
  return spec;
}

void Dashboard::draw(double now) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos);
  ImGui::SetNextWindowSize(viewport->Size);
  ImGui::Begin("loom-dash", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  const float panel_width = 340;
  ImGui::BeginChild("panels", {panel_width, 0}, true);
  draw_run_panel();
  draw_rank_panel();
  draw_alerts_panel(now);
  draw_controls_panel();
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("plots", {0, 0}, false, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  draw_plots(ImGui::GetContentRegionAvail());
  ImGui::EndChild();
  ImGui::End();
}

void Dashboard::draw_run_panel() {
  heading("Run");
  const nlohmann::json& hello = history_.hello;
  ImGui::TextWrapped("%s", source_.status().c_str());
  if (!hello.is_object()) {
    ImGui::TextDisabled("waiting for the run's hello");
    return;
  }
  const uint64_t total = history_.total_steps();
  ImGui::Text("name        %s", text_field(hello, "run", "?").c_str());
  ImGui::Text("step        %llu / %s", static_cast<unsigned long long>(history_.last_step),
              total > 0 ? std::to_string(total).c_str() : "?");
  if (total > 0) ImGui::ProgressBar(static_cast<float>(history_.last_step) / static_cast<float>(total), {-1, 0});
  std::string eta = "?";
  if (!history_.end.is_null() || (total > 0 && history_.last_step >= total)) {
    eta = "done";
  } else if (const auto ms = history_.series.find("step_ms"); ms != history_.series.end() && total > 0) {
    // The mean step time of the latest records (a history arriving in one burst says nothing).
    const auto& values = ms->second.value;
    const size_t n = std::min<size_t>(values.size(), 10);
    double sum = 0;
    for (size_t i = values.size() - n; i < values.size(); ++i) sum += values[i];
    if (n > 0) eta = loom::host::format_duration(sum / static_cast<double>(n) / 1000.0 *
                                                 static_cast<double>(total - history_.last_step));
  }
  ImGui::Text("ETA         %s", eta.c_str());
  ImGui::Text("precision   %s", text_field(hello, "precision", "?").c_str());
  const auto world = hello.find("world_size");
  ImGui::Text("world size  %s", world != hello.end() && world->is_number() ? world->dump().c_str() : "?");
  ImGui::Text("records     %llu%s", static_cast<unsigned long long>(history_.records),
              history_.dropped > 0 ? fmt::format(" ({} dropped: slow reader)", history_.dropped).c_str() : "");
  const auto recipe = hello.find("recipe");
  if (recipe != hello.end() && recipe->is_string() && ImGui::TreeNode("resolved recipe")) {
    ImGui::BeginChild("recipe", {0, 220}, true, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::TextUnformatted(recipe->get_ref<const std::string&>().c_str());
    ImGui::EndChild();
    ImGui::TreePop();
  }
}

void Dashboard::draw_rank_panel() {
  heading("Step time per rank");
  if (history_.rank_step_ms.empty()) {
    ImGui::TextDisabled("no step yet");
    return;
  }
  const double slowest = *std::max_element(history_.rank_step_ms.begin(), history_.rank_step_ms.end());
  for (size_t rank = 0; rank < history_.rank_step_ms.size(); ++rank) {
    const double ms = history_.rank_step_ms[rank];
    ImGui::Text("rank %-3zu %8.1f ms", rank, ms);
    ImGui::SameLine();
    ImGui::ProgressBar(slowest > 0 ? static_cast<float>(ms / slowest) : 0.0f, {-1, 0}, "");
  }
}

void Dashboard::draw_alerts_panel(double now) {
  heading("Alerts");
  const std::vector<Alert> alerts = evaluate_alerts(history_, now);
  if (alerts.empty()) ImGui::TextColored({0.45f, 0.85f, 0.5f, 1}, "none: loss finite, scale stable, run moving");
  for (const Alert& alert : alerts) {
    ImGui::TextColored({1, 0.35f, 0.35f, 1}, "%s", alert.rule.c_str());
    ImGui::TextWrapped("  %s", alert.message.c_str());
  }
}

void Dashboard::draw_controls_panel() {
  heading("Controls");
  const bool enabled = source_.controllable() && history_.end.is_null();
  if (!source_.controllable()) ImGui::TextDisabled("replay: nothing to control");
  ImGui::BeginDisabled(!enabled);
  const std::pair<RunCommand, const char*> buttons[] = {{RunCommand::pause, "Pause"},
                                                        {RunCommand::resume, "Resume"},
                                                        {RunCommand::checkpoint_now, "Checkpoint now"},
                                                        {RunCommand::stop, "Stop (with checkpoint)"}};
  for (const auto& [command, label] : buttons) {
    if (ImGui::Button(label)) {
      confirming_ = static_cast<int>(command);
      ImGui::OpenPopup("confirm");
    }
    if (command != RunCommand::checkpoint_now) ImGui::SameLine();
  }
  ImGui::NewLine();
  if (ImGui::BeginPopupModal("confirm", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    const auto command = static_cast<RunCommand>(confirming_);
    ImGui::Text("Send '%s' to the run?", loom::host::run_command_name(command));
    ImGui::TextDisabled("applied at the next step boundary");
    if (ImGui::Button("Yes")) {
      source_.send(command);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
  ImGui::EndDisabled();
  const size_t shown = std::min<size_t>(history_.messages.size(), 5);
  for (size_t i = history_.messages.size() - shown; i < history_.messages.size(); ++i)
    ImGui::TextWrapped("%s", history_.messages[i].c_str());

  heading("View");
  ImGui::SliderFloat("smoothing", &smoothing_, 0.0f, 0.99f, "%.2f");
  if (ImGui::Button("Show all steps")) view_.follow = true;
  ImGui::TextDisabled("wheel: zoom, drag: pan, double click: all");
}

void Dashboard::draw_plots(ImVec2 size) {
  constexpr PlotGrid grid = plot_grid(kPlotCount);
  const ImVec2 cell{plot_cell_extent(size.x, grid.columns, kPlotGap),
                    plot_cell_extent(size.y, grid.rows, kPlotGap)};
  placed_.clear();
  for (size_t i = 0; i < kPlotCount; ++i) {
    const PlotSpec spec = plot_spec(kPlots[i]);
    if (grid.cell(i).column > 0) ImGui::SameLine();
    placed_.push_back({spec.title, draw_plot(spec.title.c_str(), spec, view_, cell)});
  }
}

}  // namespace loom::dash
