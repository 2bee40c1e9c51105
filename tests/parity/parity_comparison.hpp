// Parity comparison: Loom's `debug-step` outputs (OUT.json, GRADS.safetensors; host/cli/verb_debug_step.cpp)
// against a PyTorch fixture (expected.json, expected_grads.safetensors; tools/make_parity_fixtures.py).
//
// Every quantity is one row: a loss, the NSP logits, the masked-prediction logits, or one parameter
// gradient. Its error is normwise relative: max_i |actual_i − expected_i| / max_i |expected_i|.
// The denominator has a floor: 1e-6 for outputs; for a gradient, 1% of the largest gradient element
// of the whole model, because some gradients are exactly zero in exact arithmetic (the key biases:
// softmax ignores a shift shared by all scores of a query), so their float64 reference is round-off
// and only an absolute bound is meaningful. In the fixtures every other gradient's own maximum is
// above 3% of the largest, so the floor changes nothing else. A row fails when the error exceeds
// its tolerance, when shapes or names differ, or when a value is not finite.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.hpp"

namespace loom::parity {

/// Bounds on the normwise relative error, per kind of quantity.
struct Tolerances {
  double losses = 1e-4;  ///< loss, mlm_loss, nsp_loss
  double logits = 1e-4;  ///< seq_relationship_logits, masked_prediction_logits
  double grads = 1e-3;   ///< every parameter gradient
};

struct Row {
  std::string quantity;       ///< "loss", "masked_prediction_logits", "grad bert.pooler.dense.weight"
  std::string shape;          ///< "[5, 83]"
  double max_reference = 0;   ///< max |expected|
  double max_difference = 0;  ///< max |actual − expected|
  double relative = 0;        ///< max_difference / max(max_reference, floor)
  double tolerance = 0;
  std::string problem;  ///< structural failure (missing, shape, non-finite); "" if none

  bool pass() const { return problem.empty() && relative <= tolerance; }
};

struct Report {
  std::vector<Row> rows;

  bool pass() const;
  /// One line per row (all rows, failures marked), then a verdict line naming the worst row.
  std::string table() const;
};

/// Compares the OUT.json contract keys (extra keys in either object are ignored).
void compare_outputs(const nlohmann::json& expected, const nlohmann::json& actual,
                     const Tolerances& tolerances, Report& report);
/// Compares every gradient of `expected` with the tensor of the same name in `actual` (F32/F16/BF16);
/// gradients in `actual` that the fixture lacks are failures too.
void compare_gradients(const host::SafetensorsFile& expected, const host::SafetensorsFile& actual,
                       double tolerance, Report& report);

}  // namespace loom::parity
