// The metrics stream's line protocol; see metrics_stream_protocol.hpp.
#include "loom/host/metrics_stream_protocol.hpp"

#include <array>
#include <charconv>
#include <stdexcept>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "loom/host/run_settings.hpp"
#include "loom/sdk/version.hpp"

namespace loom::host {
namespace {

constexpr std::array<std::pair<RunCommand, const char*>, 4> kCommandNames{{
    {RunCommand::pause, "pause"},
    {RunCommand::resume, "resume"},
    {RunCommand::checkpoint_now, "checkpoint-now"},
    {RunCommand::stop, "stop"},
}};

ClientMessage invalid(std::string error) {
  ClientMessage message;
  message.error = std::move(error);
  return message;
}

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
      return invalid("control needs \"command\": one of pause, resume, checkpoint-now, stop");
    ClientMessage out;
    out.kind = ClientMessage::Kind::control;
    out.command = *parsed;
    out.id = message.value("id", nlohmann::json());
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

StreamAddress parse_stream_address(std::string_view text) {
  const auto fail = [&](const char* why) {
    return std::invalid_argument(
        fmt::format("metrics stream address '{}': {} (expected HOST:PORT, e.g. 127.0.0.1:7070)", text, why));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw fail("no host or no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    throw fail("the port is not a number from 0 to 65535");
  if (host.empty()) throw fail("the host is empty");
  return {std::string(host), static_cast<uint16_t>(port)};
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code error;
  const boost::asio::ip::address address = boost::asio::ip::make_address(host, error);
  return !error && address.is_loopback();
}

}  // namespace loom::host
