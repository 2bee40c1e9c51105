// MetricsServer: the TCP stream of a run's metrics for loom-dash and other tools ([metrics] listen,
// `loom run --listen`), speaking metrics_stream_protocol.hpp. Rank 0 runs it.
//
// One Boost.Asio thread owns every socket. The training thread only hands each record (already
// formatted as a line) to that thread with a post, so a slow or stalled client never slows
// training: each client has a bounded queue of live records; when it is full the oldest record is
// dropped and the client is told how many it missed. A client that connects gets the hello and the
// whole history first (shared, not copied). Control commands go to the RunControl and are
// acknowledged to the client that sent them.
//
// Owner-only by default (docs/decisions/metrics-stream-auth.md): every client must send the token
// first; nothing, not even the hello, goes to a client before. Without a configured token the
// server makes a random one and writes it, owner-readable only, beside the endpoint in the run
// directory (metrics_stream_credentials.hpp). Bounded against misbehaving clients: at most
// `max_clients` admitted clients and as many awaiting authentication (the oldest waiting one makes
// room for a new connection), `auth_timeout_seconds` to authenticate, requests of at most 64 KiB
// and `max_requests_per_second`. Every refusal gets an error line, is counted and logged (at most
// ten lines at once, then one a second, with the number not logged).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "control/run_control.hpp"
#include "metrics/run_observer.hpp"

namespace loom::host {

struct RunSettings;

struct MetricsStreamSettings {
  std::string listen;           ///< "host:port"; port 0 picks a free port
  std::string token;            ///< required from every client; "" makes a random one
  size_t client_queue = 4096;   ///< live records buffered per client before the oldest are dropped
  std::filesystem::path run_directory{};  ///< gets metrics.endpoint and metrics.token; "" writes neither
  size_t max_clients = 8;               ///< admitted clients at once (and as many awaiting authentication)
  double auth_timeout_seconds = 5;      ///< a connection not authenticated by then is closed
  double max_requests_per_second = 20;  ///< per client (bursts of as many); a faster client is disconnected
};

/// The stream settings of a run: its [metrics] table and its run directory.
MetricsStreamSettings metrics_stream_settings(const RunSettings& run);

class MetricsServer final : public RunObserver {
 public:
  /// Binds, starts listening and writes the run directory's endpoint and token files (throws
  /// std::runtime_error naming the address or the file when it cannot). Clients are accepted from
  /// on_start on.
  MetricsServer(const MetricsStreamSettings& settings, RunControl& control);
  ~MetricsServer() override;
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// "127.0.0.1:7070" as bound (the real port when 0 was asked for).
  std::string local_endpoint() const;
  /// The token clients must send (the configured one, or the one made for this run).
  const std::string& token() const;

  void on_start(const nlohmann::json& hello) override;
  void on_record(const nlohmann::json& record) override;
  void on_end(const nlohmann::json& end) override;

  /// Sends what is queued (up to 2 s for slow clients), closes every connection, stops the thread,
  /// removes the endpoint and token files.
  void shutdown();

  struct Statistics {
    uint64_t clients = 0;                  ///< connections accepted (authenticated or not)
    uint64_t refused = 0;                  ///< connections never admitted (the three below together)
    uint64_t refused_token = 0;            ///<   a wrong token, or a first line that was not auth
    uint64_t refused_over_cap = 0;         ///<   max_clients admitted, or displaced while awaiting authentication
    uint64_t refused_silent = 0;           ///<   no token within auth_timeout_seconds
    uint64_t disconnected = 0;             ///< admitted clients cut off for too many or too long requests
    uint64_t peak_connections = 0;         ///< most connections admitted or awaiting authentication at once
    uint64_t records = 0;                  ///< records published
    uint64_t dropped = 0;                  ///< records dropped for slow clients, all clients together
    double training_thread_seconds = 0;    ///< CPU time the training thread spent in on_* calls
    double stream_thread_cpu_seconds = 0;  ///< CPU time of the stream's own thread (after shutdown)
  };
  Statistics statistics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::host
