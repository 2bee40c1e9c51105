// StreamAddress: the [metrics] listen address of a recipe ("host:port"), and whether only this
// machine can reach it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom::host {

/// "host:port" split; the host may be an IPv4/IPv6 literal ("[::1]:7070") or a name. Throws
/// std::invalid_argument naming the text and the expected form.
struct StreamAddress {
  std::string host;
  uint16_t port = 0;
};
StreamAddress parse_stream_address(std::string_view text);

/// True for addresses that only this machine can reach: 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace loom::host
