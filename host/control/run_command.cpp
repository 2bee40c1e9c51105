// Run-control command names; see run_command.hpp.
#include "control/run_command.hpp"

#include <array>
#include <utility>

namespace loom::host {
namespace {

constexpr std::array<std::pair<RunCommand, const char*>, 4> kCommandNames{{
    {RunCommand::pause, "pause"},
    {RunCommand::resume, "resume"},
    {RunCommand::checkpoint_now, "checkpoint-now"},
    {RunCommand::stop, "stop"},
}};

}  // namespace

const char* run_command_name(RunCommand command) {
  for (const auto& [value, name] : kCommandNames)
    if (value == command) return name;
  return "?";
}

std::optional<RunCommand> parse_run_command(std::string_view name) {
  for (const auto& [value, command_name] : kCommandNames)
    if (name == command_name) return value;
  return std::nullopt;
}

}  // namespace loom::host
