// MetricsLog: runs/<name>/metrics.jsonl, one JSON object per logged step or evaluation, flushed
// per line so tools (and loom-dash replaying a file) see records as they happen.
//
// Records carry "step" and a "type" ("train", "eval", "event"). The file is only ever appended to:
// a resumed run continues it. Opening at a start step drops the records after that step (an
// earlier attempt wrote them past its last checkpoint, and this run writes those steps again) and
// a torn last line, and reports how many in `dropped()`, so the file always reads as one
// uninterrupted run that matches the checkpoint history. Only the run directory's owner
// (RunDirectoryLock) opens it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace loom::host {

class MetricsLog {
 public:
  /// Continues `path` (created if missing) for a run that starts at `start_step` (0: a fresh run,
  /// else the step of the checkpoint it resumed from): records up to and including that step stay.
  MetricsLog(std::filesystem::path path, uint64_t start_step);

  /// Records of the existing file that were dropped on opening (past the start step, or torn).
  uint64_t dropped() const { return dropped_; }

  /// Appends one record as a single line and flushes it.
  void write(const nlohmann::json& record);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  uint64_t dropped_ = 0;
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
