// The logging window of a run; see log_window.hpp.
#include "train/log_window.hpp"

#include <algorithm>
#include <vector>

namespace loom::host {

void LogWindow::add(const StepOutcome& step) {
  const StepLosses& l = step.losses;
  sums_.micro_batches += l.micro_batches, sums_.rows += l.rows, sums_.tokens += l.tokens;
  sums_.mlm_tally.correct += l.mlm_tally.correct, sums_.mlm_tally.total += l.mlm_tally.total;
  allreduce_seconds_ += step.allreduce_seconds;
  // The steady state: a log step also reads losses and logits back, so it is left out.
  if (!step.measured_mlm_accuracy) max_host_waits_ = std::max(max_host_waits_, step.host_waits);
  steps_ += 1;
}

nlohmann::json LogWindow::close(const RankGroup& group, uint64_t step, const StepOutcome& last,
                                const std::array<double, 3>& losses, uint64_t skipped_steps,
                                double grad_norm) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const uint64_t window_steps = std::max<uint64_t>(1, steps_);
  const double step_ms = 1000.0 * seconds / static_cast<double>(window_steps);
  const nlohmann::json ranks = per_rank_throughput(group, step_ms, static_cast<double>(sums_.rows) / seconds);
  // Losses and counts of every rank's micro-batches (the mean over ranks and micro-batches).
  std::vector<double> sums{losses[0],
                           losses[1],
                           losses[2],
                           static_cast<double>(sums_.micro_batches),
                           static_cast<double>(sums_.rows),
                           static_cast<double>(sums_.tokens),
                           static_cast<double>(sums_.mlm_tally.correct),
                           static_cast<double>(sums_.mlm_tally.total)};
  sum_over_ranks(group, sums);
  const double micro_batches = std::max(1.0, sums[3]);
  const Tally mlm_tally{static_cast<uint64_t>(sums[6]), static_cast<uint64_t>(sums[7])};
  nlohmann::json record{{"type", "train"},
                        {"step", step},
                        {"loss", sums[0] / micro_batches},
                        {"mlm_loss", sums[1] / micro_batches},
                        {"nsp_loss", sums[2] / micro_batches},
                        {"mlm_accuracy", mlm_tally.rate()},
                        {"lr", last.lr},
                        {"loss_scale", last.loss_scale},
                        {"skipped_steps", skipped_steps},
                        {"grad_norm", grad_norm},
                        {"sequences_per_second", sums[4] / seconds},
                        {"tokens_per_second", sums[5] / seconds},
                        {"step_ms", step_ms}};
  if (max_host_waits_ >= 0) record["syncs_per_step"] = max_host_waits_;
  if (group.world > 1) {
    record["world_size"] = group.world;
    record["allreduce_ms"] = 1000.0 * allreduce_seconds_ / static_cast<double>(window_steps);
    record["ranks"] = ranks;
  }
  *this = LogWindow();
  return record;
}

}  // namespace loom::host
