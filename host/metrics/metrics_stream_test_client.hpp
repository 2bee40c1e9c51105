// A blocking line client of the metrics stream for the tests beside it (POSIX sockets, so every
// read has a deadline and a failing test cannot hang): connect to "127.0.0.1:PORT", send JSON
// lines, read the next line as JSON.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "metrics/metrics_stream_protocol.hpp"

namespace loom::host::stream_test {

class StreamTestClient {
 public:
  /// Connects to a loopback endpoint; `receive_buffer` > 0 shrinks the kernel's receive buffer.
  explicit StreamTestClient(const std::string& endpoint, int receive_buffer = 0) {
    const StreamAddress address = parse_stream_address(endpoint);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(address.port);
    ::inet_pton(AF_INET, address.host.c_str(), &to.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot connect to " + endpoint);
    }
  }
  ~StreamTestClient() { ::close(fd_); }
  StreamTestClient(const StreamTestClient&) = delete;
  StreamTestClient& operator=(const StreamTestClient&) = delete;

  void send_text(const std::string& text) {
    size_t sent = 0;
    while (sent < text.size()) {
      const ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;  // the server closed: the next read says so
      sent += static_cast<size_t>(n);
    }
  }
  void send(const nlohmann::json& message) { send_text(protocol_line(message)); }

  /// The next line as JSON; JSON null when the server closed the connection; nullopt when nothing
  /// arrived within `timeout_seconds`.
  std::optional<nlohmann::json> next(double timeout_seconds = 10) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    for (;;) {
      if (const size_t end = buffer_.find('\n'); end != std::string::npos) {
        const std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return nlohmann::json::parse(line);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return nlohmann::json(nullptr);  // closed (or reset after a refusal)
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// next(), failing the calling test's expectations plainly when nothing arrives: a JSON object
  /// {"type":"timeout"} stands for "nothing in time".
  nlohmann::json next_or_timeout(double timeout_seconds = 10) {
    std::optional<nlohmann::json> message = next(timeout_seconds);
    return message ? *message : nlohmann::json{{"type", "timeout"}};
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace loom::host::stream_test
