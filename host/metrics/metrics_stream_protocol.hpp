// The metrics stream's line protocol (docs/dashboard.md): one JSON object per '\n'-terminated line
// in both directions, shared by the server in `loom run` and by loom-dash.
//
// server → client:  {"type":"hello", "protocol":1, "run", "recipe", "sdk_version", "world_size",
//                    "step", "total_steps", "precision", "run_directory"}
//                   then the history so far, then every metrics record as written to metrics.jsonl
//                   ("type": "train" | "eval" | "event"), interleaved with
//                   {"type":"dropped", "count":N}   N records this client missed (it read too slowly)
//                   {"type":"ack", "command", "id", "step", ...}   a control command was applied
//                   {"type":"error", "message"}    a refused token or a malformed request
//                   {"type":"end", "step", "stopped_early", "checkpoint"}   the run is over
// client → server:  {"type":"auth", "token":"..."}  first, when the server requires a token
//                   {"type":"control", "command":"pause"|"resume"|"checkpoint-now"|"stop", "id":N}
//                   (N a non-negative integer, optional; no other keys)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "control/run_command.hpp"
#include "recipe/stream_address.hpp"

namespace loom::host {

inline constexpr int kMetricsStreamProtocol = 1;

/// A client's line, decoded. `error` is set (and nothing else) when the line is not a valid request.
struct ClientMessage {
  enum class Kind { auth, control, invalid } kind = Kind::invalid;
  std::string token;            ///< auth
  RunCommand command{};         ///< control
  nlohmann::json id;            ///< control: a non-negative integer echoed in the ack (null when absent)
  std::string error;            ///< invalid: what is wrong, for the error reply
};

/// Decodes one line from a client (without the '\n'). Typed: a message with a key its type does not
/// have, or a key of the wrong type ("id": "7"), is invalid — answered with an error, never acted on.
ClientMessage parse_client_message(std::string_view line);

/// One protocol line: `message.dump()` plus '\n' (records are single-line by construction).
std::string protocol_line(const nlohmann::json& message);

struct RunSettings;
/// The hello of a run: name, resolved recipe (TOML text), SDK version, world size, current and
/// total steps, precision component, run directory.
nlohmann::json make_hello_message(const RunSettings& settings, const std::string& resolved_recipe, int world_size,
                                  uint64_t step);

nlohmann::json make_auth_message(const std::string& token);
nlohmann::json make_control_message(RunCommand command, uint64_t id);
nlohmann::json make_error_message(const std::string& message);
nlohmann::json make_dropped_message(uint64_t count);

}  // namespace loom::host
