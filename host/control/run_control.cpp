// Run control at step boundaries; see run_control.hpp.
#include "control/run_control.hpp"

#include <chrono>

#include "control/stop_request.hpp"

namespace loom::host {

void RunControl::submit(RunCommand command, Reply reply, ClientId client) {
  {
    std::lock_guard lock(mutex_);
    if (command == RunCommand::pause) pause_holders_.insert(client);
    if (command == RunCommand::resume || command == RunCommand::stop) pause_holders_.clear();
    queued_.push_back({command, std::move(reply)});
    has_queued_ = true;
  }
  arrived_.notify_all();
}

void RunControl::client_gone(ClientId client, Reply reply) {
  {
    std::lock_guard lock(mutex_);
    // Bookkept at submit time, so a pause still queued when its client leaves is undone as well.
    if (pause_holders_.erase(client) == 0 || !pause_holders_.empty()) return;
    queued_.push_back({RunCommand::resume,
                       std::move(reply),
                       {{"reason", "the client that paused the run went away without resuming it"}}});
    has_queued_ = true;
  }
  arrived_.notify_all();
}

RunControl::Boundary RunControl::at_step_boundary(uint64_t step) {
  Boundary boundary;
  // The common case (nothing queued, not paused) costs one atomic load per step.
  if (!has_queued_.load(std::memory_order_acquire) && !paused_) return boundary;
  std::vector<Request> acks_now;
  std::unique_lock lock(mutex_);
  for (;;) {
    std::vector<Request> taken;
    taken.swap(queued_);
    has_queued_ = false;
    for (Request& request : taken) {
      switch (request.command) {
        case RunCommand::pause: paused_ = true; acks_now.push_back(std::move(request)); break;
        case RunCommand::resume: paused_ = false; acks_now.push_back(std::move(request)); break;
        case RunCommand::checkpoint_now: boundary.checkpoint_now = true; awaiting_ack_.push_back(std::move(request)); break;
        case RunCommand::stop: boundary.stop = true; awaiting_ack_.push_back(std::move(request)); break;
      }
    }
    if (boundary.stop) paused_ = false;
    if (!acks_now.empty()) {
      // Replies run unlocked: a reply may submit again (loom-dash in-process) without deadlock.
      lock.unlock();
      for (Request& request : acks_now) {
        nlohmann::json ack{{"type", "ack"},
                           {"command", run_command_name(request.command)},
                           {"step", step},
                           {"paused", paused_.load()}};
        ack.update(request.fields);
        request.reply(ack);
      }
      acks_now.clear();
      lock.lock();
    }
    if (!paused_ || stop_requested()) break;
    // Signals cannot notify a condition variable: poll for Ctrl-C while parked.
    arrived_.wait_for(lock, std::chrono::milliseconds(200), [&] { return !queued_.empty(); });
  }
  return boundary;
}

void RunControl::acknowledge(RunCommand command, uint64_t step, const nlohmann::json& fields) {
  reply_to(awaiting_ack_, command, step, fields);
}

void RunControl::reply_to(std::vector<Request>& requests, RunCommand command, uint64_t step,
                          const nlohmann::json& fields) {
  std::vector<Request> kept;
  for (Request& request : requests) {
    if (request.command != command) {
      kept.push_back(std::move(request));
      continue;
    }
    nlohmann::json ack{{"type", "ack"}, {"command", run_command_name(command)}, {"step", step}};
    ack.update(fields);
    request.reply(ack);
  }
  requests.swap(kept);
}

}  // namespace loom::host
