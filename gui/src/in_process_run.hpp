// InProcessRun (loom-dash RECIPE [--set ...]): trains the recipe on a worker thread of loom-dash
// itself, exactly as `loom run` would (same checks, same run directory and metrics.jsonl), and
// feeds the dashboard through a RunObserver; the controls go straight to the Trainer's RunControl.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli_context.hpp"
#include "control/run_control.hpp"
#include "metrics/run_observer.hpp"
#include "run_source.hpp"

namespace loom::dash {

class InProcessRun final : public RunSource, private loom::host::RunObserver {
 public:
  InProcessRun(loom::cli::GlobalOptions options, loom::cli::RecipeArguments recipe);
  ~InProcessRun() override;  // asks the run to stop (it checkpoints) and waits for it
  bool controllable() const override { return true; }
  void send(loom::host::RunCommand command) override;

 private:
  void on_start(const nlohmann::json& hello) override { inbox_.push(hello); }
  void on_record(const nlohmann::json& record) override { inbox_.push(record); }
  void on_end(const nlohmann::json& end) override { inbox_.push(end); }
  void train();
  void set_control(loom::host::RunControl* control);

  loom::cli::GlobalOptions options_;
  loom::cli::RecipeArguments recipe_;
  std::unique_ptr<loom::host::PluginRegistry> registry_;  // destroyed after thread_ is joined
  std::mutex control_mutex_;  // held while a command is submitted, so the Trainer outlives the call
  loom::host::RunControl* control_ = nullptr;
  std::thread thread_;
};

}  // namespace loom::dash
