// Where a training step's time goes, op family by op family, as `loom bench --profile` reports it:
// the totals a backend's OpProfiler (loom/sdk/ops/op_profiler.hpp) hands out after each step,
// summed over the timed steps, per step, and as a share of the step's time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/sdk/ops/op_profiler.hpp"

namespace loom::host {

/// One family's line of the report.
struct OpFamilyRow {
  std::string family;     ///< op_family_name
  double ms_per_step;     ///< mean time of its ops per step
  double calls_per_step;  ///< mean number of its ops per step
  double share_of_step;   ///< ms_per_step / the step's time
};

class OpProfileSummary {
 public:
  /// Adds one step's totals: OpProfiler::take_op_profile's `totals[0, count)` (index = OpFamily;
  /// entries past kOpFamilyCount are ignored).
  void add_step(const loom::OpFamilyTime* totals, size_t count);
  int64_t steps() const { return steps_; }
  /// Mean time per step of every family's ops together.
  double ms_per_step() const;
  /// The families whose ops ran, most time first (ties in OpFamily order), with shares of
  /// `step_ms`, the step's mean time. Empty before the first step.
  std::vector<OpFamilyRow> rows(double step_ms) const;
  /// {family: {"ms_per_step", "calls_per_step", "share_of_step"}} for the families of rows().
  nlohmann::json to_json(double step_ms) const;
  /// The report's lines: one per family of rows(), then the ops' total and what the step spent
  /// outside them, each line starting with `indent`.
  std::string table(double step_ms, const std::string& indent) const;

 private:
  loom::OpFamilyTime sums_[loom::kOpFamilyCount] = {};
  int64_t steps_ = 0;
};

}  // namespace loom::host
