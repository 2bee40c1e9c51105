// metrics.jsonl writing and the console progress line; see metrics_log.hpp.
#include "metrics/metrics_log.hpp"

#include <chrono>
#include <cmath>
#include <ctime>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "files/atomic_file.hpp"

namespace loom::host {

MetricsLog::MetricsLog(std::filesystem::path path, uint64_t start_step) : path_(std::move(path)) {
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
  if (std::filesystem::exists(path_)) {
    std::ifstream in(path_);
    std::ostringstream kept;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      // A torn last line (killed mid-write) or a step past the start is dropped.
      if (record.is_discarded() || !record.contains("step") || !record["step"].is_number_unsigned() ||
          record["step"].get<uint64_t>() > start_step)
        ++dropped_;
      else
        kept << line << "\n";
    }
    // Replaced as a whole (never truncated in place), so a crash here leaves the old history.
    if (dropped_ > 0) write_file_atomically(path_, kept.str());
  }
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error(path_.string() + ": cannot open for appending");
}

void MetricsLog::write(const nlohmann::json& record) {
  out_ << record.dump() << "\n";
  out_.flush();
  if (!out_) throw std::runtime_error(path_.string() + ": write failed");
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<uint64_t>(std::llround(seconds));
  if (total >= 3600) return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

std::string format_progress_line(uint64_t step, uint64_t total_steps, double loss, double lr,
                                 double loss_scale, double sequences_per_second, double eta_seconds) {
  return fmt::format("step {}/{} | loss {:.4f} | lr {:.2e} | scale {:g} | {:.1f} seq/s | ETA {}", step,
                     total_steps, loss, lr, loss_scale, sequences_per_second, format_duration(eta_seconds));
}

std::string format_headless_line(const nlohmann::json& record, uint64_t total_steps, double eta_seconds) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::string line = fmt::format(
      "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z step={}/{} loss={:.6f} lr={:.3e} loss_scale={:g} "
      "seq_per_s={:.1f} step_ms={:.1f}",
      utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
      record.value("step", uint64_t{0}), total_steps, record.value("loss", 0.0), record.value("lr", 0.0),
      record.value("loss_scale", 0.0), record.value("sequences_per_second", 0.0),
      record.value("step_ms", 0.0));
  if (record.contains("world_size"))
    line += fmt::format(" ranks={} allreduce_ms={:.1f}", record["world_size"].get<int>(),
                        record.value("allreduce_ms", 0.0));
  return line + " eta=" + format_duration(eta_seconds);
}

}  // namespace loom::host
