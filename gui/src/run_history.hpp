// RunHistory: everything loom-dash knows about one run, built from protocol messages (the stream,
// a replayed metrics.jsonl, or an in-process run): the hello, one series per plotted metric (and per
// field a panel reads), the markers (evaluations, skipped steps, checkpoints) and the latest
// per-rank step times.
// A hello starts over (a reconnect sends the whole history again).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plot_table.hpp"

namespace loom::dash {

/// One metric over steps; steps ascending (records arrive in step order).
struct Series {
  std::vector<double> step;
  std::vector<double> value;
  void add(double at, double v) {
    step.push_back(at);
    value.push_back(v);
  }
};

/// Record fields kept as series besides the plotted ones (kPlottedFields, plot_table.hpp):
/// "step_ms" for the run panel's ETA.
inline constexpr const char* kPanelFields[] = {"step_ms"};

struct RunHistory {
  nlohmann::json hello;                  ///< null until a hello arrives (a replayed file has none)
  std::map<std::string, Series> series;  ///< by field name
  std::vector<double> eval_steps, skipped_steps, checkpoint_steps;
  std::vector<double> rank_step_ms;      ///< latest, one per rank
  uint64_t last_step = 0;
  uint64_t records = 0;
  uint64_t dropped = 0;                  ///< records the server dropped because we read too slowly
  double last_record_seconds = -1;       ///< `now` of the latest train/eval record (stall detection)
  double skipped_total = 0;
  nlohmann::json end;                    ///< the end message, null while running
  std::vector<std::string> messages;     ///< acks and errors from the server, newest last

  /// Takes one message (hello, train/eval/event record, dropped, ack, error, end); `now` is the
  /// caller's clock in seconds.
  void ingest(const nlohmann::json& message, double now);
  /// Total steps of the run (hello), 0 when unknown.
  uint64_t total_steps() const;
};

}  // namespace loom::dash
