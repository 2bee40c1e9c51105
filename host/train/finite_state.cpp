// Scanning a run's flat buffers for NaN and infinity; see finite_state.hpp.
#include "train/finite_state.hpp"

#include <cmath>

#include <fmt/format.h>

namespace loom::host {
namespace {

size_t count_nonfinite(const float* data, size_t count) {
  size_t found = 0;
  for (size_t i = 0; i < count; ++i) found += std::isfinite(data[i]) ? 0 : 1;
  return found;
}

}  // namespace

std::optional<NonFiniteValues> find_nonfinite(const float* data, size_t count,
                                              const ParameterTable& parameters) {
  NonFiniteValues found;
  if (count != parameters.total_elements()) {
    found.count = count_nonfinite(data, count);
  } else {
    for (const ParameterEntry& entry : parameters.entries()) {
      const size_t here = count_nonfinite(data + entry.offset, entry.count);
      if (here > 0 && found.parameter.empty()) found.parameter = entry.name;
      found.count += here;
    }
  }
  if (found.count == 0) return std::nullopt;
  return found;
}

std::string describe_nonfinite(const std::string& what, const NonFiniteValues& values) {
  return fmt::format("{}: {} NaN or infinite value{}{}", what, values.count, values.count == 1 ? "" : "s",
                     values.parameter.empty() ? "" : ", the first in " + values.parameter);
}

std::string diverged_run_message(uint64_t step, const std::string& problem, uint64_t skipped_steps,
                                 const std::optional<std::filesystem::path>& newest_checkpoint) {
  const std::string skipped =
      skipped_steps == 0 ? ""
                         : fmt::format("; {} steps were skipped for non-finite gradients", skipped_steps);
  const std::string where =
      newest_checkpoint
          ? fmt::format(
                "The newest checkpoint, {} (the one checkpoints/latest names), holds a finite state: "
                "resume from it (--resume auto) with a lower learning rate or a longer warm-up",
                newest_checkpoint->string())
          : std::string(
                "No checkpoint of this run was written before: start again with a lower learning rate "
                "or a longer warm-up");
  return fmt::format(
      "the run diverged: at step {} its state is not finite ({}{}), so no checkpoint was written for step "
      "{}. "
      "{}",
      step, problem, skipped, step, where);
}

}  // namespace loom::host
