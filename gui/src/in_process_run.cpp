// Training in-process on a worker thread; see in_process_run.hpp.
#include "in_process_run.hpp"

#include <fmt/format.h>

#include "control/stop_request.hpp"
#include "train/trainer.hpp"

namespace loom::dash {

InProcessRun::InProcessRun(loom::cli::GlobalOptions options, loom::cli::RecipeArguments recipe)
    : options_(std::move(options)), recipe_(std::move(recipe)) {
  inbox_.set_status("loading " + recipe_.recipe);
  thread_ = std::thread([this] { train(); });
}

InProcessRun::~InProcessRun() {
  loom::host::request_stop();  // closing the window ends the run as Ctrl-C would: step, checkpoint, exit
  thread_.join();
}

void InProcessRun::train() {
  try {
    auto [recipe, registry] = loom::cli::load_and_check(options_, recipe_);
    // The plugins stay loaded until this thread has exited: their thread-local destructors run at
    // thread exit (a plugin unloaded before that crashes the process).
    registry_ = std::move(registry);
    loom::host::Trainer trainer(recipe, *registry_, loom::host::TrainOptions{"", false, false, this, ""});
    set_control(&trainer.control());
    // Declared after the trainer, so destroyed first: no command reaches a destroyed Trainer.
    struct ClearControl {
      InProcessRun* run;
      ~ClearControl() { run->set_control(nullptr); }
    } clear_control{this};
    inbox_.set_status("training " + recipe_.recipe + " in-process");
    const loom::host::TrainSummary summary = trainer.run();
    inbox_.set_status(fmt::format("{} at step {}; checkpoint {}", summary.stopped_early ? "stopped" : "finished",
                                  summary.steps, summary.last_checkpoint.string()));
  } catch (const std::exception& e) {
    inbox_.set_status(std::string("the run failed: ") + e.what());
    inbox_.push(loom::host::make_error_message(e.what()));
  }
}

void InProcessRun::set_control(loom::host::RunControl* control) {
  std::lock_guard lock(control_mutex_);
  control_ = control;
}

void InProcessRun::send(loom::host::RunCommand command) {
  std::lock_guard lock(control_mutex_);
  if (control_ == nullptr) {
    inbox_.push(loom::host::make_error_message(
        fmt::format("the run is not running: {} was not sent", loom::host::run_command_name(command))));
    return;
  }
  control_->submit(command, [this](const nlohmann::json& ack) { inbox_.push(ack); });
}

}  // namespace loom::dash
