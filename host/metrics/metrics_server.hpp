// MetricsServer: the TCP stream of a run's metrics for loom-dash and other tools ([metrics] listen,
// `loom run --listen`), speaking metrics_stream_protocol.hpp. Rank 0 runs it.
//
// One Boost.Asio thread owns every socket. The training thread only hands each record (already
// formatted as a line) to that thread with a post, so a slow or stalled client never slows
// training: each client has a bounded queue of live records; when it is full the oldest record is
// dropped and the client is told how many it missed. A client that connects gets the hello and the
// whole history first (shared, not copied). Control commands go to the RunControl and are
// acknowledged to the client that sent them. Listening beyond loopback requires a token
// (run_settings.cpp refuses the recipe otherwise); a client with a wrong or absent token gets an
// error line, is disconnected and logged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "control/run_control.hpp"
#include "metrics/run_observer.hpp"

namespace loom::host {

struct MetricsStreamSettings {
  std::string listen;           ///< "host:port"; port 0 picks a free port
  std::string token;            ///< required from clients when non-empty
  size_t client_queue = 4096;   ///< live records buffered per client before the oldest are dropped
};

class MetricsServer final : public RunObserver {
 public:
  /// Binds and starts listening (throws std::runtime_error naming the address when it cannot).
  MetricsServer(const MetricsStreamSettings& settings, RunControl& control);
  ~MetricsServer() override;
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// "127.0.0.1:7070" as bound (the real port when 0 was asked for).
  std::string local_endpoint() const;

  void on_start(const nlohmann::json& hello) override;
  void on_record(const nlohmann::json& record) override;
  void on_end(const nlohmann::json& end) override;

  /// Sends what is queued (up to 2 s for slow clients), closes every connection, stops the thread.
  void shutdown();

  struct Statistics {
    uint64_t clients = 0;                  ///< connections accepted (authenticated or not)
    uint64_t refused = 0;                  ///< connections refused for a wrong or absent token
    uint64_t records = 0;                  ///< records published
    uint64_t dropped = 0;                  ///< records dropped for slow clients, all clients together
    double training_thread_seconds = 0;    ///< time the training thread spent in on_* calls
    double stream_thread_cpu_seconds = 0;  ///< CPU time of the stream's own thread (after shutdown)
  };
  Statistics statistics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::host
