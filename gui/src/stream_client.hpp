// StreamClient (--attach): a client of a run's metrics stream. The target is a run directory
// (runs/NAME: the endpoint and, for the run's owner, the token are read from its metrics.endpoint
// and metrics.token) or HOST:PORT (the token is the given one, else the one of the run under
// ./runs that listens there). Files are read again at every connection, so a restarted run (new
// port, new token) is found. It sends the token first, hands every line to the UI, sends control
// commands, and when the connection drops or the run ends it says so and reconnects every second
// (every 5 s after a refusal; a restarted or resumed run's hello resets the plots).
#pragma once

#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "run_source.hpp"

namespace loom::dash {

class StreamClient final : public RunSource {
 public:
  /// `target`: a run directory or HOST:PORT; `token`: given with --token or LOOM_METRICS_TOKEN
  /// ("" to find it in the run directory).
  StreamClient(std::string target, std::string token);
  ~StreamClient() override;
  bool controllable() const override { return true; }
  void send(loom::host::RunCommand command) override;

 private:
  // Where and with which token the next connection goes; `token_note` says why there is none.
  struct Attachment {
    loom::host::StreamAddress address;
    std::string token, token_note;
  };
  std::optional<Attachment> resolve(std::string& why_not) const;
  void connect();
  void read();
  void write_next();
  void lost(const std::string& why);
  void retry_after(std::chrono::seconds delay);
  std::string address_text() const;

  std::optional<std::filesystem::path> run_directory_;  // set when attached by run directory
  std::optional<loom::host::StreamAddress> fixed_address_;  // set when attached by HOST:PORT
  std::string given_token_;
  Attachment current_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_{io_};
  boost::asio::steady_timer retry_{io_};
  boost::asio::streambuf input_;
  std::deque<std::string> outgoing_;
  bool connected_ = false, ended_ = false, refused_ = false;
  uint64_t next_id_ = 1;
  std::thread thread_;
};

}  // namespace loom::dash
