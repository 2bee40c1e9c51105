// The metrics stream's TCP server; see metrics_server.hpp for the threading, dropping and
// admission rules.
#include "metrics/metrics_server.hpp"

#include <time.h>

#include <algorithm>
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

#include "metrics/metrics_stream_credentials.hpp"
#include "metrics/metrics_stream_protocol.hpp"
#include "recipe/run_settings.hpp"

namespace loom::host {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Line = std::shared_ptr<const std::string>;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kMaxRequestBytes = 64 * 1024;  // a client line longer than this is an error
constexpr size_t kLinesPerWrite = 512;          // gathered into one async_write
constexpr int kSocketSendBuffer = 64 * 1024;
constexpr double kRefusalLogBurst = 10;         // refusal lines logged at once before one a second

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

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Adds the CPU time its thread spends in its scope to a nanosecond counter. CPU time, not wall
// time: on a busy machine, handing a line to the stream thread wakes it, and the scheduler may run
// something else before the training thread resumes; that wait measures the machine's load (it is
// there with no client at all), not the work the stream asks of the training thread.
class ScopedThreadCpu {
 public:
  explicit ScopedThreadCpu(std::atomic<uint64_t>& total) : total_(total), start_(thread_cpu_seconds()) {}
  ~ScopedThreadCpu() { total_ += static_cast<uint64_t>(1e9 * (thread_cpu_seconds() - start_)); }

 private:
  std::atomic<uint64_t>& total_;
  double start_;
};

const char* const kAuthFirst = "this stream requires a token: send {\"type\":\"auth\",\"token\":...} first";

}  // namespace

MetricsStreamSettings metrics_stream_settings(const RunSettings& run) {
  MetricsStreamSettings s;
  s.listen = run.metrics_listen;
  s.token = run.metrics_token;
  s.client_queue = run.metrics_client_queue;
  s.run_directory = run.run_directory();
  s.max_clients = run.metrics_max_clients;
  s.auth_timeout_seconds = run.metrics_auth_timeout_s;
  s.max_requests_per_second = run.metrics_max_requests_per_s;
  return s;
}

struct MetricsServer::Impl {
  // One client; touched only on the stream thread.
  struct Connection : std::enable_shared_from_this<Connection> {
    Connection(tcp::socket s, double request_allowance, RunControl::ClientId client_id)
        : socket(std::move(s)),
          input(kMaxRequestBytes),
          deadline(socket.get_executor()),
          allowance(request_allowance),
          last_request(Clock::now()),
          id(client_id) {}
    tcp::socket socket;
    asio::streambuf input;
    asio::steady_timer deadline;    // for the auth line
    std::string peer;
    bool admitted = false;          // token accepted: receives the stream
    bool closing = false;           // close once everything queued is written
    std::deque<Line> backlog;       // hello + history at admission: sent first, never dropped
    std::deque<Line> live;          // live records and replies: bounded, oldest dropped
    uint64_t dropped_unreported = 0;
    std::vector<Line> in_flight;    // the lines of the current async_write
    double allowance;               // requests it may still send now (refilled at the request rate)
    Clock::time_point last_request;
    RunControl::ClientId id;  // names it to the RunControl, which resumes a pause it leaves behind
  };
  enum class Refusal { token, over_cap, silent };

  MetricsStreamSettings settings;
  RunControl& control;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::string endpoint_text;
  bool credentials_written = false;

  // Stream thread only.
  Line hello;                // hello_json as a line; reset when the step moves
  nlohmann::json hello_json;
  std::vector<Line> history;
  std::set<std::shared_ptr<Connection>> connections;
  std::deque<std::shared_ptr<Connection>> waiting;  // not yet authenticated, oldest first
  size_t admitted_clients = 0;
  RunControl::ClientId last_client_id = RunControl::kNoClient;
  double refusal_log_allowance = kRefusalLogBurst;
  Clock::time_point refusal_log_time = Clock::now();
  uint64_t refusals_not_logged = 0;

  std::atomic<uint64_t> training_ns{0}, records{0}, dropped{0}, clients{0}, refused_token{0}, refused_over_cap{0},
      refused_silent{0}, disconnected{0}, peak_connections{0};
  std::atomic<size_t> open_connections{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> finishing{false};  // set on the stream thread once shutdown began there
  double stream_cpu_seconds = 0;

  Impl(const MetricsStreamSettings& s, RunControl& c) : settings(s), control(c) {}

  double request_burst() const { return std::max(1.0, settings.max_requests_per_second); }

  void accept() {
    acceptor.async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
      if (error) {
        // Closed by shutdown; anything else (out of file descriptors) is retried a little later.
        if (error == asio::error::operation_aborted || !acceptor.is_open()) return;
        auto pause = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
        pause->async_wait([this, pause](const boost::system::error_code&) {
          if (acceptor.is_open()) accept();
        });
        return;
      }
      auto connection = std::make_shared<Connection>(std::move(socket), request_burst(), ++last_client_id);
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
      await_token(connection);
      peak_connections = std::max<uint64_t>(peak_connections, admitted_clients + waiting.size());
      read(connection);
      accept();
    });
  }

  // A new connection must authenticate within the deadline. At most max_clients wait at once: the
  // oldest makes room, so silent connections cannot keep the owner out (its dashboard sends the
  // token as soon as it connects).
  void await_token(const std::shared_ptr<Connection>& c) {
    while (waiting.size() >= std::max<size_t>(1, settings.max_clients)) {
      const std::shared_ptr<Connection> oldest = waiting.front();  // a copy: refuse() erases it from `waiting`
      refuse(oldest, Refusal::over_cap,
             fmt::format("too many connections awaiting authentication (at most {}, [metrics] max_clients)",
                         settings.max_clients));
    }
    waiting.push_back(c);
    c->deadline.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(settings.auth_timeout_seconds)));
    c->deadline.async_wait([this, weak = std::weak_ptr<Connection>(c)](const boost::system::error_code& error) {
      const auto connection = weak.lock();
      if (error || !connection || connection->admitted || connection->closing) return;
      refuse(connection, Refusal::silent,
             fmt::format("no token within {:g} s ([metrics] auth_timeout_s); {}", settings.auth_timeout_seconds,
                         kAuthFirst));
    });
  }

  void admit(const std::shared_ptr<Connection>& c) {
    std::erase(waiting, c);
    c->deadline.cancel();
    c->admitted = true;
    ++admitted_clients;
    if (!hello) hello = make_line(hello_json);  // "step" is the run's current step
    c->backlog.push_back(hello);
    c->backlog.insert(c->backlog.end(), history.begin(), history.end());
    write(c);
  }

  void read(const std::shared_ptr<Connection>& c) {
    asio::async_read_until(c->socket, c->input, '\n', [this, c](const boost::system::error_code& error, size_t) {
      if (error) {
        if (error != asio::error::not_found || c->closing) return close(c);
        if (!c->admitted) return refuse(c, Refusal::token, kAuthFirst);
        ++disconnected;
        log_refusal(c->peer, "disconnected: a request line longer than 64 KiB");
        return send_and_close(c, "request line longer than 64 KiB");
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
      // A mistyped auth ("token": 5) is told what is wrong with it, not only that a token is needed.
      if (message.kind == ClientMessage::Kind::invalid)
        return refuse(c, Refusal::token, message.error + "; " + kAuthFirst);
      if (message.kind != ClientMessage::Kind::auth) return refuse(c, Refusal::token, kAuthFirst);
      if (!same_token(message.token, settings.token)) return refuse(c, Refusal::token, "wrong token");
      if (admitted_clients >= settings.max_clients)
        return refuse(c, Refusal::over_cap,
                      fmt::format("too many clients: {} are attached ([metrics] max_clients)", admitted_clients));
      return admit(c);
    }
    if (!within_request_rate(*c)) {
      ++disconnected;
      const std::string why =
          fmt::format("more than {:g} requests a second ([metrics] max_requests_per_s)", settings.max_requests_per_second);
      log_refusal(c->peer, "disconnected: " + why);
      return send_and_close(c, why);
    }
    switch (message.kind) {
      case ClientMessage::Kind::auth: return;  // already admitted
      case ClientMessage::Kind::invalid: queue(c, make_line(make_error_message(message.error))); return;
      case ClientMessage::Kind::control: break;
    }
    std::weak_ptr<Connection> weak = c;
    control.submit(
        message.command,
        [this, weak, id = message.id](const nlohmann::json& ack) {
          nlohmann::json reply = ack;
          reply["id"] = id;
          asio::post(io, [this, weak, line = make_line(reply)] {
            if (auto connection = weak.lock()) queue(connection, line);
          });
        },
        c->id);
  }

  // An admitted client left. If it held the run's pause, the run resumes; the resume is logged and
  // acknowledged to every client still attached (with its "reason"), since none of them asked for it.
  void client_left(const Connection& c) {
    control.client_gone(c.id, [this, peer = c.peer](const nlohmann::json& ack) {
      nlohmann::json reply = ack;
      reply["id"] = nullptr;
      asio::post(io, [this, peer, line = make_line(reply), step = ack.value("step", uint64_t{0})] {
        spdlog::warn("metrics stream: {} paused the run and went away; resumed at step {}", peer, step);
        for (const auto& connection : connections)
          if (connection->admitted) queue(connection, line);
      });
    });
  }

  // A token bucket: bursts of up to max_requests_per_second, refilled at that rate.
  bool within_request_rate(Connection& c) {
    const Clock::time_point now = Clock::now();
    c.allowance = std::min(request_burst(),
                           c.allowance + settings.max_requests_per_second * seconds_between(c.last_request, now));
    c.last_request = now;
    if (c.allowance < 1) return false;
    c.allowance -= 1;
    return true;
  }

  void refuse(const std::shared_ptr<Connection>& c, Refusal reason, const std::string& why) {
    std::erase(waiting, c);
    c->deadline.cancel();
    switch (reason) {
      case Refusal::token: ++refused_token; break;
      case Refusal::over_cap: ++refused_over_cap; break;
      case Refusal::silent: ++refused_silent; break;
    }
    log_refusal(c->peer, why);
    send_and_close(c, why);
  }

  // A flood of refused connections must not flood the run's log: ten lines at once, then one a
  // second, each saying how many were not logged since the previous one.
  void log_refusal(const std::string& peer, const std::string& why) {
    const Clock::time_point now = Clock::now();
    refusal_log_allowance = std::min(kRefusalLogBurst, refusal_log_allowance + seconds_between(refusal_log_time, now));
    refusal_log_time = now;
    if (refusal_log_allowance < 1) {
      ++refusals_not_logged;
      return;
    }
    refusal_log_allowance -= 1;
    const std::string not_logged =
        refusals_not_logged > 0 ? fmt::format(" ({} more refusals since the previous line, not logged)", refusals_not_logged)
                                : "";
    spdlog::warn("metrics stream: refused {} ({}){}", peer, why, not_logged);
    refusals_not_logged = 0;
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

  // The error line is all a refused client ever receives; then the connection closes.
  void send_and_close(const std::shared_ptr<Connection>& c, const std::string& message) {
    c->backlog.clear();
    c->live.clear();
    c->dropped_unreported = 0;
    c->closing = true;  // queue() adds nothing more; write() closes once the error line is out
    c->live.push_back(make_line(make_error_message(message)));
    write(c);
  }

  void close(const std::shared_ptr<Connection>& c) {
    boost::system::error_code ignored;
    c->deadline.cancel();
    if (c->socket.is_open()) {
      c->socket.shutdown(tcp::socket::shutdown_both, ignored);
      c->socket.close(ignored);
    }
    std::erase(waiting, c);
    if (connections.erase(c) > 0 && c->admitted) {
      --admitted_clients;
      client_left(*c);
    }
    open_connections = connections.size();
  }

  void publish(Line line, uint64_t step) {
    if (step > hello_json.value("step", uint64_t{0})) {
      hello_json["step"] = step;
      hello.reset();
    }
    history.push_back(line);
    for (const auto& c : connections)
      if (c->admitted) queue(c, line);
  }
};

MetricsServer::MetricsServer(const MetricsStreamSettings& settings, RunControl& control)
    : impl_(std::make_unique<Impl>(settings, control)) {
  Impl& impl = *impl_;
  if (impl.settings.token.empty()) impl.settings.token = random_stream_token();
  const StreamAddress address = parse_stream_address(settings.listen);
  try {
    tcp::resolver resolver(impl.io);
    const auto endpoints = resolver.resolve(address.host, std::to_string(address.port),
                                            tcp::resolver::numeric_service | tcp::resolver::passive);
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    impl.acceptor.open(endpoint.protocol());
    impl.acceptor.set_option(tcp::acceptor::reuse_address(true));
    impl.acceptor.bind(endpoint);
    impl.acceptor.listen();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error(fmt::format("[metrics] listen = \"{}\": cannot listen there: {}", settings.listen,
                                         e.code().message()));
  }
  const tcp::endpoint bound = impl.acceptor.local_endpoint();
  impl.endpoint_text = bound.address().is_v6() ? fmt::format("[{}]:{}", bound.address().to_string(), bound.port())
                                                : fmt::format("{}:{}", bound.address().to_string(), bound.port());
  if (!settings.run_directory.empty()) {
    write_stream_credentials(settings.run_directory, impl.endpoint_text, impl.settings.token);
    impl.credentials_written = true;
    spdlog::info("metrics stream: token in {} (readable by its owner only); attach with: loom-dash --attach {}",
                 (settings.run_directory / kStreamTokenFile).string(), settings.run_directory.string());
  }
  impl.thread = std::thread([&impl] {
    auto guard = asio::make_work_guard(impl.io);
    impl.io.run();
    impl.stream_cpu_seconds = thread_cpu_seconds();
  });
}

MetricsServer::~MetricsServer() {
  shutdown();
}

std::string MetricsServer::local_endpoint() const {
  return impl_->endpoint_text;
}

const std::string& MetricsServer::token() const {
  return impl_->settings.token;
}

void MetricsServer::on_start(const nlohmann::json& hello) {
  ScopedThreadCpu timed(impl_->training_ns);
  asio::post(impl_->io, [impl = impl_.get(), hello] {
    impl->hello_json = hello;
    impl->hello = make_line(hello);
    impl->accept();  // only now: every admitted client gets a hello first
  });
}

void MetricsServer::on_record(const nlohmann::json& record) {
  ScopedThreadCpu timed(impl_->training_ns);
  ++impl_->records;
  asio::post(impl_->io, [impl = impl_.get(), line = make_line(record), step = record.value("step", uint64_t{0})] {
    impl->publish(line, step);
  });
}

void MetricsServer::on_end(const nlohmann::json& end) {
  ScopedThreadCpu timed(impl_->training_ns);
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
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline && (impl.open_connections > 0 || !impl.finishing))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  impl.io.stop();
  impl.thread.join();
  if (impl.credentials_written) remove_stream_credentials(impl.settings.run_directory);
  const Statistics s = statistics();
  if (s.refused > 0 || s.disconnected > 0)
    spdlog::warn("metrics stream: refused {} connections ({} without the right token, {} over [metrics] "
                 "max_clients, {} silent past [metrics] auth_timeout_s), cut off {} clients for too many or "
                 "too long requests; at most {} connections were open at once",
                 s.refused, s.refused_token, s.refused_over_cap, s.refused_silent, s.disconnected,
                 s.peak_connections);
}

MetricsServer::Statistics MetricsServer::statistics() const {
  const Impl& impl = *impl_;
  Statistics s;
  s.clients = impl.clients;
  s.refused_token = impl.refused_token;
  s.refused_over_cap = impl.refused_over_cap;
  s.refused_silent = impl.refused_silent;
  s.refused = s.refused_token + s.refused_over_cap + s.refused_silent;
  s.disconnected = impl.disconnected;
  s.peak_connections = impl.peak_connections;
  s.records = impl.records;
  s.dropped = impl.dropped;
  s.training_thread_seconds = 1e-9 * static_cast<double>(impl.training_ns.load());
  s.stream_thread_cpu_seconds = impl.stream_cpu_seconds;
  return s;
}

}  // namespace loom::host
