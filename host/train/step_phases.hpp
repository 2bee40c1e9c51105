// StepPhaseTimer: where the time of train_step() goes, phase by phase, for `loom bench`.
//
// train_step() marks the end of each phase when given a timer; each mark first waits for the
// backend (Backend::synchronize), so a phase's time includes the device work it queued and not
// only the host's time to queue it (on a GPU the host runs ahead of the device). The phases
// partition the step: every moment between start() and the last mark belongs to exactly one,
// so their sum is the step's wall time. The waits cost the overlap of one phase's device work
// with the next one's host work, which is why `loom run` passes no timer and `loom bench` takes
// its throughput from a loop without one.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

#include "loom/sdk/backend.hpp"

namespace loom::host {

/// The phases of one step, in the order they first occur.
enum class StepPhase : size_t {
  data,           ///< the next batch read into host buffers (dataset, masking)
  upload,         ///< the batch copied to the backend
  forward,        ///< the blocks forward, the loss added to the window's sums
  backward,       ///< zeroing the gradients, then the blocks backward
  communication,  ///< the gradient download of the host path, the mean over ranks
  optimizer,      ///< the non-finite check, the precision decision, the update, the working copy
};
inline constexpr size_t kStepPhaseCount = 6;

/// The phase's name as `loom bench` prints it ("data", "upload", ...).
const char* step_phase_name(StepPhase phase);

class StepPhaseTimer {
 public:
  explicit StepPhaseTimer(loom::Backend& backend) : backend_(backend) {}

  /// The step begins (the backend is assumed idle or its earlier work part of no phase).
  void start();
  /// `phase` ends now: waits for the backend, then adds the time since the last mark to it.
  void end(StepPhase phase);

  /// Seconds spent in `phase` since the last reset.
  double seconds(StepPhase phase) const { return seconds_[static_cast<size_t>(phase)]; }
  /// Seconds of every phase together.
  double total_seconds() const;
  /// Forgets what was measured (after warm-up steps).
  void reset() { seconds_.fill(0); }

 private:
  using Clock = std::chrono::steady_clock;
  loom::Backend& backend_;
  Clock::time_point last_{};
  std::array<double, kStepPhaseCount> seconds_{};
};

}  // namespace loom::host
