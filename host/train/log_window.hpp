// LogWindow: what a run accumulates between two "train" metrics records — the steps' losses,
// sequences, tokens, masked-LM tally and all-reduce time — and the record it closes into.
//
// Losses and counts are summed over every rank's micro-batches when the window closes (the record
// shows the mean over ranks and micro-batches), so every rank must close its window at the same
// steps: `close` is a collective.
#pragma once

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
  /// over `group`; `skipped_steps` and `grad_norm` (of the last applied update) as the run knows
  /// them. A new window starts.
  nlohmann::json close(const RankGroup& group, uint64_t step, const StepOutcome& last, uint64_t skipped_steps,
                       double grad_norm);

 private:
  StepLosses sums_;
  double allreduce_seconds_ = 0;
  uint64_t steps_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace loom::host
