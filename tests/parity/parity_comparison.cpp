// Parity comparison (contract in parity_comparison.hpp). compare_outputs always compares loss,
// mlm_loss and masked_prediction_logits; nsp_loss and seq_relationship_logits only when the fixture's
// expected.json has one of them (a fixture of a model without NSP has neither).
#include "parity_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace loom::parity {
namespace {

// Denominator floors: outputs are O(1); a gradient is measured against at least 1% of the largest
// gradient element of the model, because some gradients are zero in exact arithmetic (a key bias
// shifts every score of a query equally, which softmax ignores) and their reference is float64
// round-off (~1e-17), against which any float32 result would be "infinitely" wrong.
constexpr double kOutputFloor = 1e-6;
constexpr double kGradientFloorFraction = 1e-2;

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Flattens a number or a rectangular nest of arrays of numbers; false (with `problem`) otherwise.
bool flatten(const nlohmann::json& value, std::size_t depth, std::vector<std::int64_t>& shape,
             std::vector<double>& out, std::string& problem) {
  if (value.is_number()) {
    if (depth != shape.size()) {
      problem = "ragged nesting";
      return false;
    }
    out.push_back(value.get<double>());
    return true;
  }
  if (value.is_null()) {  // nlohmann writes NaN and infinities as null
    problem = "non-finite value (null in JSON)";
    return false;
  }
  if (!value.is_array()) {
    problem = "not a number or an array of numbers: " + value.dump().substr(0, 40);
    return false;
  }
  if (depth == shape.size()) shape.push_back(static_cast<std::int64_t>(value.size()));
  if (depth > shape.size() || shape[depth] != static_cast<std::int64_t>(value.size())) {
    problem = "ragged array";
    return false;
  }
  for (const auto& item : value)
    if (!flatten(item, depth + 1, shape, out, problem)) return false;
  return true;
}

Row compare_values(std::string quantity, const std::vector<std::int64_t>& expected_shape,
                   const std::vector<double>& expected, const std::vector<std::int64_t>& actual_shape,
                   const std::vector<double>& actual, double tolerance, double floor) {
  Row row;
  row.quantity = std::move(quantity);
  row.shape = shape_text(expected_shape);
  row.tolerance = tolerance;
  if (actual_shape != expected_shape) {
    row.problem = "shape " + shape_text(actual_shape) + ", expected " + row.shape;
    return row;
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!std::isfinite(actual[i])) {
      row.problem = "non-finite value at flat index " + std::to_string(i);
      return row;
    }
    row.max_reference = std::max(row.max_reference, std::abs(expected[i]));
    row.max_difference = std::max(row.max_difference, std::abs(actual[i] - expected[i]));
  }
  row.relative = row.max_difference / std::max(row.max_reference, floor);
  return row;
}

}  // namespace

bool Report::pass() const {
  return !rows.empty() && std::all_of(rows.begin(), rows.end(), [](const Row& row) { return row.pass(); });
}

std::string Report::table() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-4s %-62s %-12s %11s %11s %11s %9s\n", "", "quantity", "shape",
                "max|ref|", "max|diff|", "rel.err", "tolerance");
  out += line;
  const Row* worst = nullptr;
  std::size_t failures = 0;
  for (const Row& row : rows) {
    failures += !row.pass();
    if (row.problem.empty() &&
        (worst == nullptr || row.relative / row.tolerance > worst->relative / worst->tolerance))
      worst = &row;
    if (!row.problem.empty()) {
      std::snprintf(line, sizeof line, "FAIL %-62s %-12s %s\n", row.quantity.c_str(), row.shape.c_str(),
                    row.problem.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-4s %-62s %-12s %11.3e %11.3e %11.3e %9.1e\n",
                    row.pass() ? "ok" : "FAIL", row.quantity.c_str(), row.shape.c_str(), row.max_reference,
                    row.max_difference, row.relative, row.tolerance);
    }
    out += line;
  }
  if (rows.empty()) out += "FAIL nothing was compared\n";
  out += pass() ? "PASS" : "FAIL";
  out += ": " + std::to_string(rows.size()) + " quantities, " + std::to_string(failures) + " failed";
  if (worst != nullptr) {
    std::snprintf(line, sizeof line, "; worst %s at %.3e (%.0f%% of its tolerance)", worst->quantity.c_str(),
                  worst->relative, 100.0 * worst->relative / worst->tolerance);
    out += line;
  }
  return out + "\n";
}

void compare_outputs(const nlohmann::json& expected, const nlohmann::json& actual,
                     const Tolerances& tolerances, Report& report) {
  struct Quantity {
    const char* key;
    double tolerance;
    bool nsp;  ///< next-sentence prediction: only for a model that has it
  };
  const Quantity quantities[] = {{"loss", tolerances.losses, false},
                                 {"mlm_loss", tolerances.losses, false},
                                 {"nsp_loss", tolerances.losses, true},
                                 {"seq_relationship_logits", tolerances.logits, true},
                                 {"masked_prediction_logits", tolerances.logits, false}};
  // A fixture of a model without NSP (ModernBERT; tools/make_modernbert_parity_fixtures.py) has
  // neither NSP key, and then neither is compared; a fixture with either one needs both, as before.
  const bool fixture_has_nsp = expected.contains("nsp_loss") || expected.contains("seq_relationship_logits");
  for (const auto& [key, tolerance, nsp] : quantities) {
    if (nsp && !fixture_has_nsp) continue;
    Row failed;
    failed.quantity = key;
    failed.tolerance = tolerance;
    std::vector<std::int64_t> expected_shape, actual_shape;
    std::vector<double> expected_values, actual_values;
    std::string problem;
    if (!expected.contains(key) || !flatten(expected[key], 0, expected_shape, expected_values, problem)) {
      failed.problem = "fixture expected.json: " + (problem.empty() ? std::string("key missing") : problem);
    } else if (!actual.is_object() || !actual.contains(key)) {
      failed.problem = "missing from debug-step output";
    } else if (!flatten(actual[key], 0, actual_shape, actual_values, problem)) {
      failed.problem = "debug-step output: " + problem;
    }
    if (!failed.problem.empty()) {
      failed.shape = shape_text(expected_shape);
      report.rows.push_back(failed);
      continue;
    }
    report.rows.push_back(compare_values(key, expected_shape, expected_values, actual_shape, actual_values,
                                         tolerance, kOutputFloor));
  }
}

void compare_gradients(const host::SafetensorsFile& expected, const host::SafetensorsFile& actual,
                       double tolerance, Report& report) {
  double largest = 0;
  for (const auto& reference : expected.tensors())
    for (float value : expected.read_f32(reference.name))
      largest = std::max(largest, std::abs(double{value}));
  const double floor = std::max(kGradientFloorFraction * largest, kOutputFloor);
  std::set<std::string> compared;
  for (const auto& reference : expected.tensors()) {
    const std::string quantity = "grad " + reference.name;
    compared.insert(reference.name);
    const host::SafetensorsTensor* mine = actual.find(reference.name);
    if (mine == nullptr) {
      report.rows.push_back(
          {quantity, shape_text(reference.shape), 0, 0, 0, tolerance, "missing from GRADS file"});
      continue;
    }
    std::vector<float> values;
    try {
      values = actual.read_f32(reference.name);
    } catch (const host::SafetensorsError& error) {
      report.rows.push_back({quantity, shape_text(reference.shape), 0, 0, 0, tolerance, error.what()});
      continue;
    }
    const auto expected_floats = expected.read_f32(reference.name);
    report.rows.push_back(compare_values(
        quantity, reference.shape, std::vector<double>(expected_floats.begin(), expected_floats.end()),
        mine->shape, std::vector<double>(values.begin(), values.end()), tolerance, floor));
  }
  for (const auto& extra : actual.tensors())
    if (!compared.count(extra.name))
      report.rows.push_back({"grad " + extra.name, shape_text(extra.shape), 0, 0, 0, tolerance,
                             "in GRADS file but not a BertForPreTraining parameter of the fixture"});
}

}  // namespace loom::parity
