// RunObserver: what a training run tells the outside while it runs — the hello (who the run is),
// every metrics record (the lines of metrics.jsonl) and the end. Called on the training thread on
// rank 0 only; an observer must return quickly and never block (the metrics stream hands lines to
// its own thread; loom-dash in-process queues them for its UI thread).
#pragma once

#include <nlohmann/json.hpp>

namespace loom::host {

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// {"type":"hello", "run", "recipe", "sdk_version", "world_size", "step", "total_steps", ...}
  virtual void on_start(const nlohmann::json& hello) = 0;
  /// One metrics record, exactly as written to metrics.jsonl.
  virtual void on_record(const nlohmann::json& record) = 0;
  /// {"type":"end", "step", "stopped_early", "checkpoint"}: nothing follows.
  virtual void on_end(const nlohmann::json& end) = 0;
};

}  // namespace loom::host
