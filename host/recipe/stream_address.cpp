// The metrics stream's address; see stream_address.hpp.
#include "recipe/stream_address.hpp"

#include <charconv>
#include <stdexcept>

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>

namespace loom::host {

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
