#include "eval/op_profile_summary.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace loom::host {

void OpProfileSummary::add_step(const loom::OpFamilyTime* totals, size_t count) {
  for (size_t i = 0; i < std::min(count, loom::kOpFamilyCount); ++i) {
    sums_[i].milliseconds += totals[i].milliseconds;
    sums_[i].calls += totals[i].calls;
  }
  ++steps_;
}

double OpProfileSummary::ms_per_step() const {
  if (steps_ == 0) return 0;
  double sum = 0;
  for (const loom::OpFamilyTime& family : sums_) sum += family.milliseconds;
  return sum / static_cast<double>(steps_);
}

std::vector<OpFamilyRow> OpProfileSummary::rows(double step_ms) const {
  std::vector<OpFamilyRow> rows;
  if (steps_ == 0) return rows;
  const auto n = static_cast<double>(steps_);
  for (size_t i = 0; i < loom::kOpFamilyCount; ++i) {
    if (sums_[i].calls == 0) continue;
    const double ms = sums_[i].milliseconds / n;
    rows.push_back(OpFamilyRow{loom::op_family_name(static_cast<loom::OpFamily>(i)), ms,
                               static_cast<double>(sums_[i].calls) / n, step_ms > 0 ? ms / step_ms : 0});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpFamilyRow& a, const OpFamilyRow& b) { return a.ms_per_step > b.ms_per_step; });
  return rows;
}

nlohmann::json OpProfileSummary::to_json(double step_ms) const {
  nlohmann::json profile = nlohmann::json::object();
  for (const OpFamilyRow& row : rows(step_ms))
    profile[row.family] = {{"ms_per_step", row.ms_per_step},
                           {"calls_per_step", row.calls_per_step},
                           {"share_of_step", row.share_of_step}};
  return profile;
}

std::string OpProfileSummary::table(double step_ms, const std::string& indent) const {
  std::string text;
  for (const OpFamilyRow& row : rows(step_ms))
    text += fmt::format("{}{:<20}{:>10.3f} ms {:>9.1f} calls {:>6.1f}%\n", indent, row.family,
                        row.ms_per_step, row.calls_per_step, 100 * row.share_of_step);
  const double ops = ms_per_step();
  const double share = step_ms > 0 ? ops / step_ms : 0;
  text += fmt::format("{}{:<20}{:>10.3f} ms {:>15} {:>6.1f}%\n", indent, "in ops", ops, "", 100 * share);
  text += fmt::format("{}{:<20}{:>10.3f} ms {:>15} {:>6.1f}%\n", indent, "between ops",
                      std::max(0.0, step_ms - ops), "", 100 * std::max(0.0, 1 - share));
  return text;
}

}  // namespace loom::host
