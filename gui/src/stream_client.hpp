// StreamClient (--attach HOST:PORT): a client of a run's metrics stream. It sends the token first
// when given, hands every line to the UI, sends control commands, and when the connection drops
// or the run ends it says so and reconnects every second (a restarted or resumed run on the same
// address is picked up again; its hello resets the plots).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "run_source.hpp"

namespace loom::dash {

class StreamClient final : public RunSource {
 public:
  StreamClient(std::string address, std::string token);
  ~StreamClient() override;
  bool controllable() const override { return true; }
  void send(loom::host::RunCommand command) override;

 private:
  void connect();
  void read();
  void write_next();
  void lost(const std::string& why);

  loom::host::StreamAddress address_;
  std::string token_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_{io_};
  boost::asio::steady_timer retry_{io_};
  boost::asio::streambuf input_;
  std::deque<std::string> outgoing_;
  bool connected_ = false, ended_ = false;
  uint64_t next_id_ = 1;
  std::thread thread_;
};

}  // namespace loom::dash
