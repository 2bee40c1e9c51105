// The alert rules; see alert_rules.hpp.
#include "alert_rules.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace loom::dash {
namespace {

const Series* find_series(const RunHistory& history, const char* name) {
  const auto it = history.series.find(name);
  return it == history.series.end() || it->second.value.empty() ? nullptr : &it->second;
}

}  // namespace

std::vector<Alert> evaluate_alerts(const RunHistory& history, double now, const AlertThresholds& thresholds) {
  std::vector<Alert> alerts;
  if (const Series* loss = find_series(history, "loss"); loss && !std::isfinite(loss->value.back()))
    alerts.push_back({"non-finite loss", fmt::format("the training loss is {} at step {}", loss->value.back(),
                                                      loss->step.back())});

  if (const Series* scale = find_series(history, "loss_scale")) {
    double peak = 0;
    for (double v : scale->value)
      if (std::isfinite(v)) peak = std::max(peak, v);
    const double latest = scale->value.back();
    if (latest < 1 || (peak > 0 && latest <= peak / std::exp2(thresholds.scale_collapse_log2)))
      alerts.push_back({"loss-scale collapse",
                        fmt::format("the loss scale is {:g} at step {} (peak {:g})", latest, scale->step.back(), peak)});
  }

  const bool finished = !history.end.is_null() ||
                        (history.total_steps() > 0 && history.last_step >= history.total_steps());
  const double silent = now - history.last_record_seconds;
  if (!finished && history.last_record_seconds >= 0 && silent > thresholds.stall_seconds)
    alerts.push_back({"stalled run", fmt::format("no record for {:.0f} s (last at step {})", silent, history.last_step)});

  if (const Series* rate = find_series(history, "sequences_per_second"); rate && rate->value.size() >= 6) {
    const size_t n = rate->value.size();
    const size_t window = std::min(thresholds.throughput_window, n - 1);
    std::vector<double> before(rate->value.end() - 1 - static_cast<std::ptrdiff_t>(window), rate->value.end() - 1);
    std::nth_element(before.begin(), before.begin() + static_cast<std::ptrdiff_t>(before.size() / 2), before.end());
    const double median = before[before.size() / 2];
    const double latest = rate->value.back();
    if (median > 0 && latest < thresholds.throughput_fraction * median)
      alerts.push_back({"throughput drop", fmt::format("{:.1f} seq/s at step {} against a median of {:.1f}", latest,
                                                       rate->step.back(), median)});
  }
  return alerts;
}

}  // namespace loom::dash
