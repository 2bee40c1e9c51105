// Non-finite model outputs refused or withheld; see finite_outputs.hpp.
#include "eval/finite_outputs.hpp"

#include <cmath>

#include <fmt/format.h>

namespace loom::host {
namespace {

constexpr const char* kWhy =
    "its weights hold NaN or inf, or overflow on this input (a run that diverged can save such "
    "weights: try an earlier checkpoint)";

// Keys of an evaluation record that count what was evaluated rather than measure the model.
bool is_count(const std::string& key) {
  return key == "eval_examples" || key == "eval_batches" || key == "eval_masked_tokens" ||
         key == "eval_nonfinite_batches";
}

}  // namespace

std::optional<size_t> first_nonfinite(std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return i;
  return std::nullopt;
}

void require_finite_outputs(std::span<const float> values, size_t row_width, const std::string& output,
                            const std::string& checkpoint, const std::function<std::string(size_t)>& rows) {
  const std::optional<size_t> first = first_nonfinite(values);
  if (!first) return;
  size_t count = 0;
  for (const float v : values) count += std::isfinite(v) ? 0 : 1;
  const size_t row = row_width == 0 ? 0 : *first / row_width;
  throw NonFiniteOutputError(fmt::format(
      "{}: the model's {} are not finite ({} of {} in this batch, the first {} in {}): {}; no output is "
      "written for it",
      checkpoint, output, count, values.size(), values[*first], rows(row), kWhy));
}

void withhold_nonfinite_metrics(nlohmann::json& metrics, uint64_t nonfinite_batches) {
  if (nonfinite_batches == 0) return;
  for (auto it = metrics.begin(); it != metrics.end(); ++it)
    if (!is_count(it.key())) *it = nullptr;
  metrics["eval_nonfinite_batches"] = nonfinite_batches;
}

void refuse_nonfinite_evaluation(const nlohmann::json& metrics, const std::string& checkpoint) {
  const uint64_t bad = metrics.value("eval_nonfinite_batches", uint64_t{0});
  if (bad == 0) return;
  throw NonFiniteOutputError(fmt::format(
      "{}: the model's outputs are not finite on {} of {} evaluation batches (their loss is NaN or inf): {}; "
      "no metrics are reported",
      checkpoint, bad, metrics.value("eval_batches", uint64_t{0}), kWhy));
}

}  // namespace loom::host
