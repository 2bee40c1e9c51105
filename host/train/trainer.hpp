// Trainer: `loom run`. Construction builds the run (components, datasets, model, optimizer) and
// resumes or initialises it; `run()` is the loop:
//
//   while steps remain and nobody asked to stop:
//     train_step()              zero, micro-batches, gradient sync, precision, update (train_step.hpp)
//     log window → record       every `train.log_every` steps (log_window.hpp, run_reporter.hpp)
//     checkpoint                every `checkpoint.every` steps
//     evaluation                every `train.eval_every` steps on [eval_data]
//     step boundary             RunControl commands of the metrics stream (pause, checkpoint-now,
//                               stop), shared with every rank
//   then a last checkpoint and evaluation — in that order, so a failing evaluation never costs
//   the trained weights. Ctrl-C/SIGTERM finish the step, checkpoint and return normally.
//   A checkpoint is never written of a state that is not finite (finite_state.hpp): the run ends
//   with an error naming the newest checkpoint, which `latest` still names.
//
// Device backends (memory the host cannot dereference): the all-reduce, the non-finite check and
// the optimizer run on host copies of the gradients and master weights — one gradient download
// after backward, one weight upload after the optimizer (host_mirror.hpp,
// docs/decisions/device-memory-host-paths.md); on the CPU those copies are the buffers themselves.
//
// Ownership: the caller holds the run directory (RunDirectoryLock; `loom run` takes it before
// constructing the trainer, rank 0 only under MPI). The trainer then removes checkpoints a killed
// run left half-written and continues metrics.jsonl from the start step.
//
// Data parallelism: rank 0's weights are broadcast at start (checksum-verified); each rank reads
// its block of every global batch (dataset.hpp); rank 0 alone writes checkpoints and metrics.
// Determinism: dropout keys derive from (seed, step, micro-batch × world + rank); data order from
// (seed, epoch); nothing depends on wall time, so one recipe and seed give bit-identical losses on one
// thread count, and a resumed run continues exactly as the uninterrupted one would.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "control/run_control.hpp"
#include "metrics/run_observer.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "recipe/recipe.hpp"

namespace loom::host {

struct TrainOptions {
  std::string resume;     ///< "": start fresh (refused when checkpoints exist), "auto", or a checkpoint path
  bool console = true;    ///< print the progress line every log interval
  bool headless = false;  ///< batch-log lines (timestamp, key=value) instead of the progress line
  RunObserver* observer = nullptr;  ///< also told the hello, every record and the end (rank 0; loom-dash)
  std::string listen;               ///< overrides [metrics] listen when set (`loom run --listen`)
};

struct TrainSummary {
  uint64_t steps = 0;          ///< steps done when the run ended
  double final_loss = 0;       ///< mean training loss of the last log window
  double seconds = 0;          ///< wall time of the loop
  bool stopped_early = false;  ///< a stop signal ended the run
  nlohmann::json last_eval;    ///< the last evaluation record (null when none ran)
  std::filesystem::path last_checkpoint;
  std::filesystem::path run_directory;
};

class Trainer {
 public:
  Trainer(const Recipe& recipe, const PluginRegistry& registry, TrainOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Trains until `train.steps` or a stop signal; throws on failure (nothing half-written).
  TrainSummary run();
  /// True on rank 0, the rank that prints and writes.
  bool leader() const;

  /// Pause/resume/checkpoint-now/stop, applied at step boundaries (any thread may submit).
  RunControl& control();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace loom::host
