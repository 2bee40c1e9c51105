// Whether a run's state — the master weights and every optimizer state tensor — is finite.
//
// A run that diverges (a learning rate far too high, bad data) fills its weights or its Adam
// moments with NaN or infinity; every later step is skipped for non-finite gradients, and nothing
// in the state can become finite again. A checkpoint of that state is worthless, and with
// `checkpoint.keep` rotation writing it would delete the last checkpoint worth resuming from. So
// write_run_checkpoint checks the state before it writes a byte and throws NonFiniteState instead;
// the trainer turns that into the run's error, naming the newest checkpoint, which `latest` still
// names (docs/decisions/non-finite-checkpoints.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "model/parameter_table.hpp"

namespace loom::host {

/// Non-finite values found in one flat buffer.
struct NonFiniteValues {
  size_t count = 0;       ///< NaN or ±infinity elements
  std::string parameter;  ///< the parameter holding the first of them ("" when the buffer has another layout)
};

/// Scans `data` [count], a flat buffer in `parameters`' layout (the master weights, or one
/// optimizer state tensor of the same size), over its parameters' elements only (the alignment
/// padding between them is never read). A buffer of another size is scanned whole. nullopt when
/// every value is finite.
std::optional<NonFiniteValues> find_nonfinite(const float* data, size_t count,
                                              const ParameterTable& parameters);

/// What write_run_checkpoint throws, before writing anything, when the state is not finite.
class NonFiniteState : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "weights: 4096 NaN or infinite values, the first in bert.pooler.dense.weight"; `what` names the
/// buffer ("weights", "optimizer state 'exp_avg'").
std::string describe_nonfinite(const std::string& what, const NonFiniteValues& values);

/// The run's error when its state is found non-finite at `step` (`problem`: NonFiniteState's
/// text): the run diverged, no checkpoint was written for the step, and where to resume from —
/// `newest_checkpoint`, the one `latest` names, or a fresh start when there is none.
std::string diverged_run_message(uint64_t step, const std::string& problem, uint64_t skipped_steps,
                                 const std::optional<std::filesystem::path>& newest_checkpoint);

}  // namespace loom::host
