// MetricsLog: runs/<name>/metrics.jsonl, one JSON object per logged step or evaluation, flushed
// per line so tools (and loom-dash replaying a file) see records as they happen.
//
// Records carry "step" and a "type" ("train", "eval", "event"). Opening for a resumed run drops
// the records after the resumed step (they belong to the interrupted continuation, which the
// resumed run will write again), so the file always reads as one uninterrupted run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

namespace loom::host {

class MetricsLog {
 public:
  /// Starts a new file, or (with `resumed_step`) keeps the records up to and including that step.
  MetricsLog(std::filesystem::path path, std::optional<uint64_t> resumed_step);

  /// Appends one record as a single line and flushes it.
  void write(const nlohmann::json& record);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

/// One console progress line: "step 120/2000 | loss 7.1234 | lr 1.20e-03 | scale 65536 |
/// 312.4 seq/s | ETA 5m12s".
/// The `--headless` line for batch logs: UTC timestamp, then key=value pairs of a train record.
std::string format_headless_line(const nlohmann::json& record, uint64_t total_steps, double eta_seconds);

std::string format_progress_line(uint64_t step, uint64_t total_steps, double loss, double lr,
                                 double loss_scale, double sequences_per_second, double eta_seconds);

/// "1h02m", "5m12s", "42s".
std::string format_duration(double seconds);

}  // namespace loom::host
