// `loom run RECIPE [--set k=v] [--resume auto|DIR]`: validate the recipe, then train.
// Ctrl-C / SIGTERM finish the current step, write a checkpoint and exit 0. The run directory is
// taken (RunDirectoryLock) before the trainer looks into it, and held until the run has ended.
#include <iostream>

#include "cli_context.hpp"
#include "loom/host/metrics_log.hpp"
#include "loom/host/run_directory_lock.hpp"
#include "loom/host/run_settings.hpp"
#include "loom/host/trainer.hpp"

namespace loom::cli {
namespace {

void register_run_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<RecipeArguments>();
  auto resume = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto* verb = app.add_subcommand("run", "train as the recipe says");
  add_recipe_arguments(*verb, *args);
  verb->add_option("--resume", *resume,
                   "continue from a checkpoint: 'auto' (the newest) or a checkpoint directory");
  verb->add_flag("--quiet", *quiet, "no progress lines");
  add_plugin_flags(*verb, options);
  verb->callback([&options, args, resume, quiet] {
    auto [recipe, registry] = load_and_check(options, *args);
    // Before the trainer reads checkpoints or writes anything; under MPI only rank 0 will take it.
    const host::RunDirectoryLock ownership =
        host::RunDirectoryLock::acquire(host::read_run_settings(recipe).run_directory());
    host::Trainer trainer(recipe, *registry, host::TrainOptions{*resume, !*quiet});
    const host::TrainSummary summary = trainer.run();
    std::cerr << (summary.stopped_early ? "stopped" : "finished") << " at step " << summary.steps << " in "
              << host::format_duration(summary.seconds) << "; checkpoint " << summary.last_checkpoint.string()
              << "\n";
  });
}

const VerbRegistration registration(&register_run_verb);

}  // namespace
}  // namespace loom::cli
