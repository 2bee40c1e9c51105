// LogWindow: what a run accumulates between two "train" metrics records — the steps' losses,
// sequences, tokens, masked-LM tally and all-reduce time — and the record it closes into.
//
// Losses and counts are summed over every rank's micro-batches when the window closes (the record
// shows the mean over ranks and micro-batches), so every rank must close its window at the same
// steps: `close` is a collective.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "train/data_parallel.hpp"
#include "train/train_step.hpp"

namespace loom::host {

class LogWindow {
 public:
  LogWindow() : start_(std::chrono::steady_clock::now()) {}

  /// Adds one step.
  void add(const StepOutcome& step);

  /// The "train" record of the window that ends with `last` (step number `step`, counted), summed
  /// over `group`; `losses` are the window's loss sums {loss, mlm, nsp} (LossSums::take),
  /// `skipped_steps` and `grad_norm` (of the last applied update) as the run knows them. A new
  /// window starts.
  nlohmann::json close(const RankGroup& group, uint64_t step, const StepOutcome& last,
                       const std::array<double, 3>& losses, uint64_t skipped_steps, double grad_norm);

 private:
  StepLosses sums_;
  int64_t max_host_waits_ = -1;  // most host waits of a step that was not a log step (-1: none seen)
  double allreduce_seconds_ = 0;
  uint64_t steps_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace loom::host
