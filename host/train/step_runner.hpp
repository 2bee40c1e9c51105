// StepRunner: the steps of a run as `loom run` (trainer.cpp) and `loom bench` (verb_bench.cpp)
// both take them — the one place a StepParts is built. It owns what the steps share beyond the
// model (the gradient mean over ranks, the window's loss sums on the backend, the instance
// trace, the batches read ahead) and calls train_step(), so the benchmark measures the very
// function a run calls, with its schedule, loss scale, gradient accumulation and read-ahead.
#pragma once

#include <cstdint>
#include <memory>

#include "recipe/run_settings.hpp"
#include "train/step_phases.hpp"
#include "train/train_step.hpp"

namespace loom::host {

/// The model side of the steps, owned by the caller (the trainer, `loom bench`).
struct StepModel {
  Model& model;
  BatchStaging& staging;
  HostBatchBuffers& buffers;
  HostMirror& master;             ///< host view of the flat master weights
  HostMirror& grads;              ///< host view of the flat gradients
  BackendUpdate* backend_update;  ///< the backend path, or nullptr for the host path
};

class StepRunner {
 public:
  /// Steps of `model` with the run's components and settings (seed, accumulation, all-reduce
  /// mode) on this rank of `group`. Logs how gradients are averaged when that is not the default.
  StepRunner(RunComponents& components, const RunSettings& settings, const StepModel& model, RankGroup group);
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  /// train_step() for step number `step`; `phases` (bench) times its phases, nullptr (run) not.
  StepOutcome run(uint64_t step, bool measure_mlm_accuracy, StepPhaseTimer* phases = nullptr) const {
    return train_step(parts_, step, measure_mlm_accuracy, phases);
  }

  /// Where the data is after the batches the steps took: what a checkpoint saves (the dataset
  /// itself has read ahead, batch_prefetcher.hpp).
  loom::DatasetCursor data_cursor() const { return batches_->cursor(); }
  /// Reading ahead paused while the hold lives: for anything else that reads data meanwhile.
  [[nodiscard]] BatchPrefetcher::Hold hold_data() const { return batches_->hold(); }

  /// The losses the steps added since the last take (the trainer's log window).
  LossSums& loss_sums() { return loss_sums_; }
  /// True when gradient buckets are all-reduced while backward runs.
  bool overlapping() const { return parts_.group.world > 1 && sync_.overlapping(); }

 private:
  GradientSync sync_;
  LossSums loss_sums_;
  InstanceTrace trace_;
  std::unique_ptr<BatchPrefetcher> batches_;  // reading from construction until destruction
  StepParts parts_;
};

}  // namespace loom::host
