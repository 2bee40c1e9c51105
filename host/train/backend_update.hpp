// BackendUpdate: the end of a training step where the parameters live (the backend path,
// docs/decisions/device-optimizer.md). After backward:
//
//   decide():  the optimizer's gradient pass on the backend (Σ g², a non-finite flag there), and
//              the precision policy's decision from that flag — one 4-byte read, on a GPU the
//              step's one synchronisation
//   update():  the optimizer's passes over the master weights, its state and the gradients, all
//              in backend memory; they write the working (compute-dtype) copy as well where the
//              backend offers OptimizerWorkingCopy and the optimizer BackendOptimizerWorkingCopy,
//              else a backend op casts it after them (docs/decisions/optimizer-working-copy.md)
//
// so no gradient or weight crosses to the host; the host keeps the counter, the schedule and the
// loss scale. Host mirrors (host_mirror.hpp) serve only checkpoints, evaluation and the start of a
// run. The path is taken when the backend offers OptimizerSteps, the optimizer BackendOptimizer
// and the precision policy BackendPrecision; with several ranks only on host-addressable memory,
// where the gradient all-reduce can work on the buffer itself. Otherwise — or with the environment
// variable LOOM_HOST_OPTIMIZER=1, which exists to compare the two paths — the step takes the host
// path (train_step.cpp), unchanged.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/backend_optimizer.hpp"
#include "loom/sdk/backend_precision.hpp"
#include "model/model.hpp"
#include "train/run_components.hpp"

namespace loom::host {

/// What the backend path updates: the flat f32 master weights and gradients on `backend`, what
/// refreshes the working (compute-dtype) copy after an update, and that copy — flat bf16/f16
/// [total_elements] on `backend`, undefined in f32 compute — for the optimizer's passes to write
/// instead. It must equal the cast of `master` when the path is attached (elements no update
/// touches are never written again).
struct UpdatedBuffers {
  loom::Backend& backend;
  loom::Tensor master;
  loom::Tensor grads;
  std::function<void()> refresh_working_copy;
  loom::Tensor working;
};

class BackendUpdate {
 public:
  /// The backend memory of the non-finite flag.
  static constexpr size_t kFlagBytes = sizeof(int32_t);

  /// Why a run of `world` ranks on `backend` takes the host path, or "" when every component
  /// offers the backend path (nothing is attached).
  static std::string host_path_reason(RunComponents& components, loom::Backend& backend, int world);
  /// The backend path for `buffers` if every component offers it (the optimizer is then attached
  /// to the backend: its state moves there), else nullptr. Call after the optimizer's setup() and
  /// before its state is restored. Logs which path the run takes, and why.
  static std::unique_ptr<BackendUpdate> attach_if_offered(RunComponents& components, UpdatedBuffers buffers,
                                                          int world);
  /// The same for a model's buffers (Model::refresh_compute_weights refreshes its working copy).
  static std::unique_ptr<BackendUpdate> attach_if_offered(RunComponents& components, Model& model, int world);

  /// The precision policy's decision on the gradients.
  loom::PrecisionDecision decide();
  /// One optimizer step on the backend with `args`, then the working copy refreshed unless the
  /// passes wrote it.
  void update(const loom::OptimizerStepArgs& args);
  /// Whether the optimizer's passes write the working copy (no cast after an update).
  bool passes_write_working_copy() const { return passes_write_working_copy_; }
  /// The global gradient norm of the last applied update (0 before the first); reading it waits
  /// for the backend, so the trainer asks at log steps only.
  double last_grad_norm();

  /// The optimizer's view of its state in backend memory (checkpoints, resume).
  loom::BackendOptimizer& optimizer() const { return *optimizer_; }

  BackendUpdate(RunComponents& components, UpdatedBuffers buffers, loom::BackendOptimizer& optimizer,
                loom::BackendPrecision& precision);

 private:
  /// Hands the working copy to the optimizer's plan where the backend and the optimizer offer it
  /// (their working-copy interfaces); logs which way the copy is refreshed.
  void hand_working_copy_to_passes();

  RunComponents& components_;
  UpdatedBuffers buffers_;
  loom::BackendOptimizer* optimizer_;
  loom::BackendPrecision* precision_;
  loom::Buffer flag_;  // i32 [1]: 1 when a gradient was not finite
  bool passes_write_working_copy_ = false;
};

}  // namespace loom::host
