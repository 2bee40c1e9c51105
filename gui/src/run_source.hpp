// RunSource: where loom-dash's protocol messages come from — a metrics stream (--attach), a
// metrics.jsonl file (--replay) or a run trained in-process (RECIPE). Each source fills a
// MessageInbox from its own thread; the UI thread drains it once per frame.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/metrics_stream_protocol.hpp"

namespace loom::dash {

/// Messages and a status line handed from a source's thread to the UI thread.
class MessageInbox {
 public:
  void push(nlohmann::json message) {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(message));
  }
  void drain(std::vector<nlohmann::json>& out) {
    std::lock_guard lock(mutex_);
    for (auto& m : messages_) out.push_back(std::move(m));
    messages_.clear();
  }
  void set_status(std::string status) {
    std::lock_guard lock(mutex_);
    status_ = std::move(status);
  }
  std::string status() const {
    std::lock_guard lock(mutex_);
    return status_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<nlohmann::json> messages_;
  std::string status_;
};

class RunSource {
 public:
  virtual ~RunSource() = default;
  /// Moves the messages that arrived since the last call into `out` (UI thread).
  void drain(std::vector<nlohmann::json>& out) { inbox_.drain(out); }
  /// One line for the status bar ("connected to ...", "connection lost: ...; reconnecting").
  std::string status() const { return inbox_.status(); }
  /// Whether send() reaches a run (attach and in-process modes; not replay).
  virtual bool controllable() const = 0;
  /// Sends a run-control command; the acknowledgement arrives as a message.
  virtual void send(loom::host::RunCommand command) = 0;
  /// True once everything available so far has been delivered (a replayed file read to its end).
  virtual bool caught_up() const { return true; }

 protected:
  MessageInbox inbox_;
};

}  // namespace loom::dash
