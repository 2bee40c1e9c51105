// The metrics stream's line protocol; see metrics_stream_protocol.hpp.
#include "metrics/metrics_stream_protocol.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "recipe/run_settings.hpp"
#include "loom/sdk/version.hpp"

namespace loom::host {
namespace {

ClientMessage invalid(std::string error) {
  ClientMessage message;
  message.error = std::move(error);
  return message;
}

// A client message holds only the keys of its type: an unknown key (a typo such as "idd", or a
// field of a newer protocol) is refused rather than ignored, so no request is half understood.
std::string unknown_key(const nlohmann::json& message, std::initializer_list<std::string_view> known,
                        std::string_view type, std::string_view expected) {
  for (const auto& [key, value] : message.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      return fmt::format("{}: unknown key {} ({} has {})", type, nlohmann::json(key).dump(), type, expected);
  return "";
}

std::string shown(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ClientMessage parse_client_message(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const nlohmann::json message = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded() || !message.is_object())
    return invalid("expected one JSON object per line");
  const auto type = message.find("type");
  if (type == message.end() || !type->is_string())
    return invalid("the message has no \"type\" (expected \"auth\" or \"control\")");
  if (*type == "auth") {
    const auto token = message.find("token");
    if (token == message.end() || !token->is_string()) return invalid("auth needs a string \"token\"");
    if (std::string why = unknown_key(message, {"type", "token"}, "auth", "\"type\" and \"token\"");
        !why.empty())
      return invalid(std::move(why));
    ClientMessage out;
    out.kind = ClientMessage::Kind::auth;
    out.token = token->get<std::string>();
    return out;
  }
  if (*type == "control") {
    const auto command = message.find("command");
    const std::optional<RunCommand> parsed =
        command != message.end() && command->is_string() ? parse_run_command(command->get<std::string>())
                                                         : std::nullopt;
    if (!parsed)
      return invalid(fmt::format("control needs \"command\": one of pause, resume, checkpoint-now, stop{}",
                                 command == message.end() ? "" : ", got " + shown(*command)));
    // The id is echoed in the acknowledgement; a client matches acks by it, so it has one type.
    const auto id = message.find("id");
    if (id != message.end() && !id->is_number_unsigned())
      return invalid("control: \"id\" must be a non-negative integer (or absent), got " + shown(*id));
    if (std::string why = unknown_key(message, {"type", "command", "id"}, "control",
                                      "\"type\", \"command\" and an optional \"id\"");
        !why.empty())
      return invalid(std::move(why));
    ClientMessage out;
    out.kind = ClientMessage::Kind::control;
    out.command = *parsed;
    if (id != message.end()) out.id = *id;
    return out;
  }
  return invalid(fmt::format("unknown message type {} (expected \"auth\" or \"control\")", type->dump()));
}

std::string protocol_line(const nlohmann::json& message) {
  std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  return line;
}

nlohmann::json make_hello_message(const RunSettings& settings, const std::string& resolved_recipe, int world_size,
                                  uint64_t step) {
  std::string precision = "fp32";
  try {
    precision = toml::parse(resolved_recipe)["precision"]["component"].value_or(precision);
  } catch (const toml::parse_error&) {
    // The recipe was parsed once already; the hello keeps the default rather than failing a run.
  }
  return {{"type", "hello"},
          {"protocol", kMetricsStreamProtocol},
          {"run", settings.name},
          {"recipe", resolved_recipe},
          {"sdk_version", loom::kSdkVersion},
          {"world_size", world_size},
          {"step", step},
          {"total_steps", settings.steps},
          {"precision", precision},
          {"run_directory", settings.run_directory().string()}};
}

nlohmann::json make_auth_message(const std::string& token) {
  return {{"type", "auth"}, {"token", token}};
}

nlohmann::json make_control_message(RunCommand command, uint64_t id) {
  return {{"type", "control"}, {"command", run_command_name(command)}, {"id", id}};
}

nlohmann::json make_error_message(const std::string& message) {
  return {{"type", "error"}, {"message", message}};
}

nlohmann::json make_dropped_message(uint64_t count) {
  return {{"type", "dropped"}, {"count", count}};
}

}  // namespace loom::host
