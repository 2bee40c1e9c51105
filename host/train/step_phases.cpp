// Phase timing of train_step(); see step_phases.hpp.
#include "train/step_phases.hpp"

namespace loom::host {

const char* step_phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::data:
      return "data";
    case StepPhase::upload:
      return "upload";
    case StepPhase::forward:
      return "forward";
    case StepPhase::backward:
      return "backward";
    case StepPhase::communication:
      return "communication";
    case StepPhase::optimizer:
      return "optimizer";
  }
  return "?";
}

void StepPhaseTimer::start() {
  last_ = Clock::now();
}

void StepPhaseTimer::end(StepPhase phase) {
  backend_.synchronize();
  const Clock::time_point now = Clock::now();
  seconds_[static_cast<size_t>(phase)] += std::chrono::duration<double>(now - last_).count();
  last_ = now;
}

double StepPhaseTimer::total_seconds() const {
  double sum = 0;
  for (double s : seconds_) sum += s;
  return sum;
}

}  // namespace loom::host
