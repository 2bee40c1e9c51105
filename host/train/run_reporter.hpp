// RunReporter: everyone who hears about a run — runs/<name>/metrics.jsonl, the metrics stream
// (`[metrics] listen`, loom-dash over TCP), an in-process observer (loom-dash running the recipe
// itself) and the console. Rank 0 reports; on the other ranks every call does nothing.
//
// Opening writes recipe.resolved.toml (without a [metrics] token), continues metrics.jsonl from the start step (an "event"
// record says when a resumed run dropped records an earlier attempt wrote past its checkpoint),
// starts the stream and sends every listener the hello.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/run_control.hpp"
#include "metrics/metrics_log.hpp"
#include "metrics/metrics_server.hpp"
#include "metrics/run_observer.hpp"
#include "recipe/run_settings.hpp"
#include "train/trainer.hpp"

namespace loom::host {

/// `resolved_recipe` with [metrics] token replaced by a placeholder: the copy in the run directory
/// is for reading by anyone who can read the directory, the token only for the run's clients.
std::string without_metrics_token(const std::string& resolved_recipe);

class RunReporter {
 public:
  /// `resumed_from`: the checkpoint the run continues (empty for a fresh run).
  RunReporter(bool leader, const RunSettings& settings, const TrainOptions& options,
              const std::string& resolved_recipe, int world, uint64_t start_step,
              const std::filesystem::path& resumed_from, RunControl& control);
  ~RunReporter();

  /// Appends `record` to metrics.jsonl and sends it to every listener.
  void record(const nlohmann::json& record);
  /// A "train" record, plus the console's progress line (`eta_seconds` to the last step).
  void train(const nlohmann::json& record, double eta_seconds);
  /// An "eval" record, plus its console line.
  void eval(const nlohmann::json& record);
  /// The end message to every listener; closes the stream and prints its statistics.
  void end(const TrainSummary& summary);

 private:
  bool leader_;
  const RunSettings& settings_;
  const TrainOptions& options_;
  std::unique_ptr<MetricsLog> log_;
  std::unique_ptr<MetricsServer> stream_;
  std::vector<RunObserver*> observers_;
};

}  // namespace loom::host
