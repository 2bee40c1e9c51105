// The metrics stream's TCP server; see metrics_server.hpp for the threading and dropping rules.
#include "metrics/metrics_server.hpp"

#include <time.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace loom::host {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Line = std::shared_ptr<const std::string>;

namespace {

constexpr size_t kMaxRequestBytes = 64 * 1024;  // a client line longer than this is an error
constexpr size_t kLinesPerWrite = 512;          // gathered into one async_write
constexpr int kSocketSendBuffer = 64 * 1024;

Line make_line(const nlohmann::json& message) {
  return std::make_shared<const std::string>(protocol_line(message));
}

// Compares without an early exit, so the time taken does not reveal how much of a token matched.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i % (b.size() + 1)]);
  return difference == 0;
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Adds the wall time of its scope to a nanosecond counter.
class ScopedNanoseconds {
 public:
  explicit ScopedNanoseconds(std::atomic<uint64_t>& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~ScopedNanoseconds() {
    total_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
  }

 private:
  std::atomic<uint64_t>& total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

struct MetricsServer::Impl {
  // One client; touched only on the stream thread.
  struct Connection : std::enable_shared_from_this<Connection> {
    explicit Connection(tcp::socket s) : socket(std::move(s)), input(kMaxRequestBytes) {}
    tcp::socket socket;
    asio::streambuf input;
    std::string peer;
    bool admitted = false;          // token accepted (or none required): receives the stream
    bool closing = false;           // close once everything queued is written
    std::deque<Line> backlog;       // hello + history at admission: sent first, never dropped
    std::deque<Line> live;          // live records and replies: bounded, oldest dropped
    uint64_t dropped_unreported = 0;
    std::vector<Line> in_flight;    // the lines of the current async_write
  };

  MetricsStreamSettings settings;
  RunControl& control;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::string endpoint_text;

  // Stream thread only.
  Line hello;                // hello_json as a line; reset when the step moves
  nlohmann::json hello_json;
  std::vector<Line> history;
  std::set<std::shared_ptr<Connection>> connections;

  std::atomic<uint64_t> training_ns{0}, records{0}, dropped{0}, clients{0}, refused{0};
  std::atomic<size_t> open_connections{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> finishing{false};  // set on the stream thread once shutdown began there
  double stream_cpu_seconds = 0;

  Impl(const MetricsStreamSettings& s, RunControl& c) : settings(s), control(c) {}

  void accept() {
    acceptor.async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
      if (error) return;  // closed by shutdown
      auto connection = std::make_shared<Connection>(std::move(socket));
      boost::system::error_code ignored;
      const auto remote = connection->socket.remote_endpoint(ignored);
      connection->peer = fmt::format("{}:{}", remote.address().to_string(), remote.port());
      connection->socket.set_option(tcp::no_delay(true), ignored);
      // A fixed, modest kernel buffer: the per-client queue, not megabytes of autotuned socket
      // buffer, is what holds a slow client's backlog, so drops are counted and reported.
      connection->socket.set_option(asio::socket_base::send_buffer_size(kSocketSendBuffer), ignored);
      connections.insert(connection);
      open_connections = connections.size();
      ++clients;
      if (settings.token.empty()) admit(connection);
      read(connection);
      accept();
    });
  }

  void admit(const std::shared_ptr<Connection>& c) {
    c->admitted = true;
    if (!hello) hello = make_line(hello_json);  // "step" is the run's current step
    c->backlog.push_back(hello);
    c->backlog.insert(c->backlog.end(), history.begin(), history.end());
    write(c);
  }

  void read(const std::shared_ptr<Connection>& c) {
    asio::async_read_until(c->socket, c->input, '\n', [this, c](const boost::system::error_code& error, size_t) {
      if (error) {
        if (error == asio::error::not_found) send_and_close(c, "request line longer than 64 KiB");
        else close(c);
        return;
      }
      std::istream in(&c->input);
      std::string line;
      std::getline(in, line);
      handle(c, parse_client_message(line));
      if (c->socket.is_open() && !c->closing) read(c);
    });
  }

  void handle(const std::shared_ptr<Connection>& c, const ClientMessage& message) {
    if (!c->admitted) {
      if (message.kind == ClientMessage::Kind::auth && same_token(message.token, settings.token)) {
        admit(c);
        return;
      }
      ++refused;
      const bool absent = message.kind != ClientMessage::Kind::auth;
      spdlog::warn("metrics stream: refused {} ({} token)", c->peer, absent ? "no" : "wrong");
      send_and_close(c, absent ? "this stream requires a token: send {\"type\":\"auth\",\"token\":...} first"
                               : "wrong token");
      return;
    }
    switch (message.kind) {
      case ClientMessage::Kind::auth: return;  // already admitted (or no token required)
      case ClientMessage::Kind::invalid: queue(c, make_line(make_error_message(message.error))); return;
      case ClientMessage::Kind::control: break;
    }
    std::weak_ptr<Connection> weak = c;
    control.submit(message.command, [this, weak, id = message.id](const nlohmann::json& ack) {
      nlohmann::json reply = ack;
      reply["id"] = id;
      asio::post(io, [this, weak, line = make_line(reply)] {
        if (auto connection = weak.lock()) queue(connection, line);
      });
    });
  }

  void queue(const std::shared_ptr<Connection>& c, Line line) {
    if (!c->admitted || c->closing) return;
    if (c->live.size() >= settings.client_queue) {
      c->live.pop_front();
      ++c->dropped_unreported;
      ++dropped;
    }
    c->live.push_back(std::move(line));
    write(c);
  }

  void write(const std::shared_ptr<Connection>& c) {
    if (!c->in_flight.empty() || !c->socket.is_open()) return;
    if (c->dropped_unreported > 0 && c->backlog.empty()) {
      c->in_flight.push_back(make_line(make_dropped_message(c->dropped_unreported)));
      c->dropped_unreported = 0;
    }
    for (std::deque<Line>* source : {&c->backlog, &c->live})
      while (!source->empty() && c->in_flight.size() < kLinesPerWrite) {
        c->in_flight.push_back(std::move(source->front()));
        source->pop_front();
      }
    if (c->in_flight.empty()) {
      if (c->closing || finishing) close(c);
      return;
    }
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(c->in_flight.size());
    for (const Line& line : c->in_flight) buffers.emplace_back(asio::buffer(*line));
    asio::async_write(c->socket, buffers, [this, c](const boost::system::error_code& error, size_t) {
      c->in_flight.clear();
      if (error) return close(c);
      write(c);
    });
  }

  void send_and_close(const std::shared_ptr<Connection>& c, const std::string& message) {
    c->admitted = true;  // so the error line is queued
    c->backlog.clear();
    c->live.clear();
    queue(c, make_line(make_error_message(message)));
    c->closing = true;
    c->admitted = false;
    write(c);
  }

  void close(const std::shared_ptr<Connection>& c) {
    boost::system::error_code ignored;
    if (c->socket.is_open()) {
      c->socket.shutdown(tcp::socket::shutdown_both, ignored);
      c->socket.close(ignored);
    }
    connections.erase(c);
    open_connections = connections.size();
  }

  void publish(Line line, uint64_t step) {
    if (step > hello_json.value("step", uint64_t{0})) {
      hello_json["step"] = step;
      hello.reset();
    }
    history.push_back(line);
    for (const auto& c : connections) queue(c, line);
  }
};

MetricsServer::MetricsServer(const MetricsStreamSettings& settings, RunControl& control)
    : impl_(std::make_unique<Impl>(settings, control)) {
  const StreamAddress address = parse_stream_address(settings.listen);
  try {
    tcp::resolver resolver(impl_->io);
    const auto endpoints = resolver.resolve(address.host, std::to_string(address.port),
                                            tcp::resolver::numeric_service | tcp::resolver::passive);
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    impl_->acceptor.open(endpoint.protocol());
    impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(endpoint);
    impl_->acceptor.listen();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error(fmt::format("[metrics] listen = \"{}\": cannot listen there: {}", settings.listen,
                                         e.code().message()));
  }
  const tcp::endpoint bound = impl_->acceptor.local_endpoint();
  impl_->endpoint_text = bound.address().is_v6() ? fmt::format("[{}]:{}", bound.address().to_string(), bound.port())
                                                 : fmt::format("{}:{}", bound.address().to_string(), bound.port());
  impl_->thread = std::thread([impl = impl_.get()] {
    auto guard = asio::make_work_guard(impl->io);
    impl->io.run();
    impl->stream_cpu_seconds = thread_cpu_seconds();
  });
}

MetricsServer::~MetricsServer() {
  shutdown();
}

std::string MetricsServer::local_endpoint() const {
  return impl_->endpoint_text;
}

void MetricsServer::on_start(const nlohmann::json& hello) {
  ScopedNanoseconds timed(impl_->training_ns);
  asio::post(impl_->io, [impl = impl_.get(), hello] {
    impl->hello_json = hello;
    impl->hello = make_line(hello);
    impl->accept();  // only now: every admitted client gets a hello first
  });
}

void MetricsServer::on_record(const nlohmann::json& record) {
  ScopedNanoseconds timed(impl_->training_ns);
  ++impl_->records;
  asio::post(impl_->io, [impl = impl_.get(), line = make_line(record), step = record.value("step", uint64_t{0})] {
    impl->publish(line, step);
  });
}

void MetricsServer::on_end(const nlohmann::json& end) {
  ScopedNanoseconds timed(impl_->training_ns);
  asio::post(impl_->io, [impl = impl_.get(), line = make_line(end), step = end.value("step", uint64_t{0})] {
    impl->publish(line, step);
  });
}

void MetricsServer::shutdown() {
  Impl& impl = *impl_;
  if (impl.stopped.exchange(true)) return;
  asio::post(impl.io, [&impl] {
    impl.finishing = true;
    boost::system::error_code ignored;
    impl.acceptor.close(ignored);
    const auto open = impl.connections;
    for (const auto& c : open) impl.write(c);  // closes the idle ones, the busy ones after their last write
  });
  // Clients that keep up get everything; a stalled client is cut off after the grace period.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline &&
         (impl.open_connections > 0 || !impl.finishing))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  impl.io.stop();
  impl.thread.join();
}

MetricsServer::Statistics MetricsServer::statistics() const {
  const Impl& impl = *impl_;
  Statistics s;
  s.clients = impl.clients;
  s.refused = impl.refused;
  s.records = impl.records;
  s.dropped = impl.dropped;
  s.training_thread_seconds = 1e-9 * static_cast<double>(impl.training_ns.load());
  s.stream_thread_cpu_seconds = impl.stream_cpu_seconds;
  return s;
}

}  // namespace loom::host
