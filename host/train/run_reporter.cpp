// Where a run's records go; see run_reporter.hpp.
#include "train/run_reporter.hpp"

#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include "files/atomic_file.hpp"
#include "metrics/metrics_stream_protocol.hpp"

namespace fs = std::filesystem;

namespace loom::host {

std::string without_metrics_token(const std::string& resolved_recipe) {
  toml::table recipe;
  try {
    recipe = toml::parse(resolved_recipe);
  } catch (const toml::parse_error&) {
    return resolved_recipe;  // parsed once already; never fails a run over a copy for reading
  }
  toml::table* metrics = recipe["metrics"].as_table();
  if (metrics == nullptr || !metrics->contains("token")) return resolved_recipe;
  metrics->insert_or_assign("token", "(set; not written here)");
  std::ostringstream out;
  out << toml::toml_formatter{recipe} << "\n";
  return out.str();
}

RunReporter::RunReporter(bool leader, const RunSettings& settings, const TrainOptions& options,
                         const std::string& resolved_recipe, int world, uint64_t start_step,
                         const fs::path& resumed_from, RunControl& control)
    : leader_(leader), settings_(settings), options_(options) {
  if (!leader_) return;
  const fs::path run_dir = settings.run_directory();
  fs::create_directories(run_dir);
  write_file_atomically(run_dir / "recipe.resolved.toml", without_metrics_token(resolved_recipe));
  log_ = std::make_unique<MetricsLog>(run_dir / "metrics.jsonl", start_step);
  if (log_->dropped() > 0)
    spdlog::warn(
        "{}: dropped {} records after step {} (an earlier attempt wrote them past its last "
        "checkpoint; this run writes those steps again)",
        log_->path().string(), log_->dropped(), start_step);
  if (!resumed_from.empty() || log_->dropped() > 0) {
    nlohmann::json event{{"type", "event"}, {"step", start_step}, {"dropped_records", log_->dropped()}};
    if (!resumed_from.empty()) event["resumed_from"] = resumed_from.string();
    log_->write(event);
  }
  if (!settings.metrics_listen.empty()) {
    stream_ = std::make_unique<MetricsServer>(metrics_stream_settings(settings), control);
    observers_.push_back(stream_.get());
    std::cerr << "metrics stream listening on " << stream_->local_endpoint() << "\n";
  }
  if (options.observer != nullptr) observers_.push_back(options.observer);
  for (RunObserver* o : observers_)
    o->on_start(make_hello_message(settings, resolved_recipe, world, start_step));
}

RunReporter::~RunReporter() = default;

void RunReporter::record(const nlohmann::json& record) {
  if (!leader_) return;
  log_->write(record);
  for (RunObserver* o : observers_) o->on_record(record);
}

void RunReporter::train(const nlohmann::json& record, double eta_seconds) {
  if (!leader_) return;
  this->record(record);
  if (!options_.console) return;
  const uint64_t step = record["step"];
  std::cerr << (options_.headless
                    ? format_headless_line(record, settings_.steps, eta_seconds)
                    : format_progress_line(step, settings_.steps, record["loss"], record["lr"],
                                           record["loss_scale"], record["sequences_per_second"], eta_seconds))
            << "\n";
}

void RunReporter::eval(const nlohmann::json& record) {
  if (!leader_) return;
  this->record(record);
  if (options_.console) std::cerr << "eval step " << record["step"] << ": " << record.dump() << "\n";
}

void RunReporter::end(const TrainSummary& summary) {
  if (!leader_) return;
  for (RunObserver* o : observers_)
    o->on_end({{"type", "end"},
               {"step", summary.steps},
               {"stopped_early", summary.stopped_early},
               {"checkpoint", summary.last_checkpoint.string()}});
  if (!stream_) return;
  stream_->shutdown();
  const MetricsServer::Statistics st = stream_->statistics();
  const double stream_seconds = st.training_thread_seconds + st.stream_thread_cpu_seconds;
  std::cerr << fmt::format(
      "metrics stream: {} clients ({} refused), {} records, {} dropped for slow clients; {:.2f} ms on the "
      "training thread + {:.2f} ms stream-thread CPU = {:.3f}% of the {:.2f} s loop\n",
      st.clients, st.refused, st.records, st.dropped, 1e3 * st.training_thread_seconds,
      1e3 * st.stream_thread_cpu_seconds, 100.0 * stream_seconds / summary.seconds, summary.seconds);
}

}  // namespace loom::host
