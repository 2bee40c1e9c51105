// libFuzzer target for the metrics stream's line protocol (metrics/metrics_stream_protocol.hpp),
// both ends of it. Every line of the input is
// - a client's request to the server: parse_client_message either refuses it with an error (and
//   nothing else) or yields an auth or a control message that, written back with the client's own
//   encoders, parses to the same request; the error reply is one protocol line;
// - a server's message to loom-dash: RunHistory::ingest takes any JSON value without throwing or
//   converting a number out of range, and counts at most one record per message;
// - a metrics.endpoint line: parse_stream_address refuses it with std::invalid_argument or yields a
//   host and a port that print back to an address it parses the same (hosts without brackets).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "metrics/metrics_stream_protocol.hpp"
#include "recipe/stream_address.hpp"
#include "run_history.hpp"

using loom::host::ClientMessage;
using loom_fuzz::require;

namespace {

void check_request(std::string_view line) {
  const ClientMessage message = loom::host::parse_client_message(line);
  if (message.kind == ClientMessage::Kind::invalid) {
    require(!message.error.empty(), "a refused request says why");
    const std::string reply = loom::host::protocol_line(loom::host::make_error_message(message.error));
    require(reply.find('\n') == reply.size() - 1, "the error reply is one line");
    return;
  }
  require(message.error.empty(), "an accepted request carries no error");
  if (message.kind == ClientMessage::Kind::auth) {
    std::string again = loom::host::protocol_line(loom::host::make_auth_message(message.token));
    again.pop_back();
    const ClientMessage parsed = loom::host::parse_client_message(again);
    require(parsed.kind == ClientMessage::Kind::auth && parsed.token == message.token, "auth round trip");
    return;
  }
  require(message.id.is_null() || message.id.is_number_unsigned(), "a control id is absent or unsigned");
  const std::uint64_t id = message.id.is_null() ? 0 : message.id.get<std::uint64_t>();
  std::string again = loom::host::protocol_line(loom::host::make_control_message(message.command, id));
  again.pop_back();
  const ClientMessage parsed = loom::host::parse_client_message(again);
  require(parsed.kind == ClientMessage::Kind::control && parsed.command == message.command &&
              parsed.id.get<std::uint64_t>() == id,
          "control round trip");
}

void check_server_message(std::string_view line, loom::dash::RunHistory& history) {
  const nlohmann::json message = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return;
  const std::uint64_t records = history.records;
  history.ingest(message, 1.0);
  // A hello starts the history over; any other message adds at most one record.
  require(history.records == records || history.records == records + 1 || history.records == 0,
          "one message, at most one record");
  (void)history.total_steps();
}

void check_address(std::string_view line) {
  loom::host::StreamAddress address;
  try {
    address = loom::host::parse_stream_address(line);
  } catch (const std::invalid_argument&) {
    return;
  }
  require(!address.host.empty(), "an address has a host");
  (void)loom::host::is_loopback_host(address.host);
  // "[[a]]:1" names host "[a]"; brackets inside a host are nothing an address can print back.
  if (address.host.find_first_of("[]") != std::string::npos) return;
  const bool bracket = address.host.find(':') != std::string::npos;
  const std::string printed = (bracket ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
  const loom::host::StreamAddress again = loom::host::parse_stream_address(printed);
  require(again.host == address.host && again.port == address.port, "an address prints back to itself");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  loom::dash::RunHistory history;
  std::size_t start = 0;
  while (start <= input.size()) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    const std::string_view line = input.substr(start, end - start);
    check_request(line);
    check_server_message(line, history);
    check_address(line);
    start = end + 1;
  }
  return 0;
}
