// RunCommand: what a user may ask of a running training run from outside it — pause, resume,
// checkpoint now, stop — and the names the metrics stream's protocol gives them.
#pragma once

#include <optional>
#include <string_view>

namespace loom::host {

/// A run-control command: applied by the trainer at the next step boundary, then acknowledged.
enum class RunCommand { pause, resume, checkpoint_now, stop };

/// "pause", "resume", "checkpoint-now", "stop".
const char* run_command_name(RunCommand command);
/// The command named `name`, or nullopt.
std::optional<RunCommand> parse_run_command(std::string_view name);

}  // namespace loom::host
