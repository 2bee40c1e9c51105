// RunControl: pause, resume, checkpoint-now and stop for a running Trainer. Clients (the metrics
// stream's connections, loom-dash training in-process) submit commands from any thread; the
// trainer takes them at step boundaries only, so a command never interrupts a step, and every
// command is acknowledged once it has taken effect (pause/resume when the loop parks or goes on,
// checkpoint-now once the checkpoint is committed, stop once the final checkpoint is written).
//
// A pause belongs to the clients that asked for it: when the last of them goes away (a dashboard
// closed or its connection lost) without a resume, the run resumes by itself rather than stay
// parked with nobody left to resume it (docs/decisions/pause-held-by-client.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/run_command.hpp"

namespace loom::host {

class RunControl {
 public:
  /// Receives the acknowledgement {"type":"ack","command",...,"step"}; called on the training thread.
  using Reply = std::function<void(const nlohmann::json& ack)>;

  /// What the trainer does at this boundary besides pausing.
  struct Boundary {
    bool checkpoint_now = false;
    bool stop = false;
  };

  /// Who submitted a command: a metrics-stream connection's number, or kNoClient for a submitter
  /// that never goes away (loom-dash training in-process: its window is the run's own process).
  using ClientId = uint64_t;
  static constexpr ClientId kNoClient = 0;

  /// Queues a command (any thread). A pause is held by `client` until a resume or a stop.
  void submit(RunCommand command, Reply reply, ClientId client = kNoClient);

  /// `client` went away (any thread). When it held the pause and no other holder is left, a resume
  /// is queued; `reply` gets its acknowledgement, which carries "reason". Otherwise nothing happens.
  void client_gone(ClientId client, Reply reply);

  /// Training thread, between steps: takes the queued commands; while paused, blocks until a resume
  /// or a stop arrives (or a stop signal, polled). Pause and resume are acknowledged here.
  Boundary at_step_boundary(uint64_t step);

  /// Training thread: acknowledges every taken checkpoint-now or stop with `fields` added.
  void acknowledge(RunCommand command, uint64_t step, const nlohmann::json& fields);

  bool paused() const { return paused_.load(); }

 private:
  struct Request {
    RunCommand command;
    Reply reply;
    nlohmann::json fields = nlohmann::json::object();  ///< added to the acknowledgement
  };
  void reply_to(std::vector<Request>& requests, RunCommand command, uint64_t step, const nlohmann::json& fields);

  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<Request> queued_;
  std::vector<Request> awaiting_ack_;  // taken checkpoint-now / stop requests (training thread only)
  // The clients whose pause is in effect or queued, as the queue will leave it: a pause adds its
  // client, a resume or a stop empties it (guarded by mutex_).
  std::set<ClientId> pause_holders_;
  std::atomic<bool> has_queued_{false};
  std::atomic<bool> paused_{false};
};

}  // namespace loom::host
