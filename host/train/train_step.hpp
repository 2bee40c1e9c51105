// train_step(): one optimizer step of `loom run`, the page to read first.
//
//   zero gradients
//   k micro-batches: next batch (read ahead by a thread: batch_prefetcher.hpp) → upload →
//                    forward (dropout keyed by step and micro-batch) → backward with loss
//                    scale / k, so the gradients are the mean over micro-batches
//   gradients to the host view (one bulk copy on a device backend: host_mirror.hpp), unless the
//                    step ends on the backend (backend_update.hpp: no gradient or weight copies)
//   several ranks:   mean over ranks (buckets that overlapped the last backward, or one all-reduce:
//                    gradient_sync.hpp); at an epoch's end, rescaled to the batches that ran
//   precision:       non-finite check → apply or skip (dynamic loss scaling backs off on a skip)
//   update:          learning rate from the schedule at the successful-step count → optimizer step
//                    on the flat master weights → working (compute-dtype) weights refreshed
//
// It returns what happened; logging windows, evaluation, checkpoints and run control are the
// trainer's (trainer.cpp), around the step.
#pragma once

#include <cstdint>
#include <optional>

#include "eval/evaluator.hpp"
#include "loom/sdk/ops/transfer_counts.hpp"
#include "model/batch_staging.hpp"
#include "model/host_batch_buffers.hpp"
#include "model/host_mirror.hpp"
#include "model/model.hpp"
#include "train/backend_update.hpp"
#include "train/batch_prefetcher.hpp"
#include "train/data_parallel.hpp"
#include "train/gradient_sync.hpp"
#include "train/instance_trace.hpp"
#include "train/loss_sums.hpp"
#include "train/run_components.hpp"
#include "train/step_phases.hpp"

namespace loom::host {

/// This rank's micro-batches of one step, counted (their losses go to StepParts::loss_sums).
struct StepLosses {
  uint64_t micro_batches = 0;  ///< micro-batches that had rows
  uint64_t rows = 0;           ///< sequences
  uint64_t tokens = 0;         ///< non-padding tokens
  uint64_t slots = 0;          ///< rows × columns of the padded batches (tokens + padding)
  Tally mlm_tally;             ///< masked-LM accuracy of the last micro-batch, when asked for
};

/// What one step did.
struct StepOutcome {
  StepLosses losses;
  bool applied = false;          ///< false: the precision policy skipped it (non-finite gradients)
  double loss_scale = 0;         ///< the loss scale backward used
  double lr = 0;                 ///< the learning rate of the update (0 when skipped)
  /// The global gradient norm of the run's last applied update, when known: this step's when
  /// applied on the host path; read from the backend at log steps on the backend path.
  std::optional<double> grad_norm;
  double allreduce_seconds = 0;  ///< time blocked in the gradient all-reduce
  /// Times the step made the host wait for the backend (copies to the host, synchronisations),
  /// on a backend that counts them (TransferCounter); -1 otherwise.
  int64_t host_waits = -1;
  bool measured_mlm_accuracy = false;  ///< a log step: it also read the masked-LM logits back
};

/// What a step works on; StepRunner (step_runner.hpp) builds it, for `loom run` and `loom bench`.
struct StepParts {
  RunComponents& components;
  Model& model;
  BatchStaging& staging;
  BatchPrefetcher& batches;  ///< the dataset's batches, read ahead in order
  HostMirror& master;  ///< host view of the flat master weights
  HostMirror& grads;   ///< host view of the flat gradients
  BackendUpdate* backend_update;  ///< the backend path, or nullptr for the host path
  GradientSync& sync;
  LossSums& loss_sums;  ///< where each micro-batch's losses are added, on the backend
  const loom::TransferCounter* transfer_counter;  ///< the backend's, or nullptr
  RankGroup group;
  uint64_t seed;               ///< the run's seed (dropout keys)
  uint64_t grad_accumulation;  ///< micro-batches per step (k)
  InstanceTrace& trace;
};

/// Runs step number `step` (0-based, before it is counted). `measure_mlm_accuracy`: also tally the
/// masked-LM accuracy of the last micro-batch (log steps only: it reads the logits back).
/// `phases` (`loom bench`; nullptr in a run): each phase ends when the backend has finished it
/// and its time is added there (step_phases.hpp).
StepOutcome train_step(const StepParts& parts, uint64_t step, bool measure_mlm_accuracy,
                       StepPhaseTimer* phases = nullptr);

/// The dropout key of one micro-batch (a splitmix64 mix; documented so other tools can reproduce
/// it). `micro_batch` is its place among all ranks' micro-batches of the step: micro × world + rank.
uint64_t dropout_key(uint64_t seed, uint64_t step, uint64_t micro_batch);

}  // namespace loom::host
