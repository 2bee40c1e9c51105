// `loom run RECIPE [--set k=v] [--resume auto|DIR] [--headless] [--listen HOST:PORT]`: validate the
// recipe, then train. --listen is [metrics] listen (the metrics stream for loom-dash).
// Ctrl-C / SIGTERM finish the current step, write a checkpoint and exit 0. Under mpirun/srun
// every rank runs this; rank 0 alone prints, writes metrics and checkpoints (docs/cluster.md).
// The run directory is taken (RunDirectoryLock, by rank 0) before the trainer looks into it, and
// held until the run has ended.
#include <iostream>
#include <optional>

#include <spdlog/spdlog.h>

#include "cli_context.hpp"
#include "train/launch_environment.hpp"
#include "metrics/metrics_log.hpp"
#include "train/run_directory_lock.hpp"
#include "recipe/run_settings.hpp"
#include "train/trainer.hpp"

namespace loom::cli {
namespace {

void register_run_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<RecipeArguments>();
  auto resume = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto headless = std::make_shared<bool>(false);
  auto listen = std::make_shared<std::string>();
  auto* verb = app.add_subcommand("run", "train as the recipe says");
  add_recipe_arguments(*verb, *args);
  verb->add_option("--resume", *resume,
                   "continue from a checkpoint: 'auto' (the newest) or a checkpoint directory");
  verb->add_flag("--quiet", *quiet, "no progress lines");
  verb->add_flag("--headless", *headless,
                 "cluster/batch mode: one plain timestamped key=value line per log step, no colour");
  verb->add_option("--listen", *listen,
                   "stream metrics to loom-dash on HOST:PORT (port 0: any free port); overrides [metrics] listen. "
                   "Clients must send the token the run writes, owner-only, to its run directory: "
                   "loom-dash --attach runs/NAME");
  add_plugin_flags(*verb, options);
  verb->callback([&options, args, resume, quiet, headless, listen] {
    if (*headless) spdlog::set_pattern("%Y-%m-%dT%H:%M:%S %l %v");
    auto [recipe, registry] = load_and_check(options, *args);
    // Before the trainer reads checkpoints or writes anything; under a launcher only rank 0 takes it.
    std::optional<host::RunDirectoryLock> ownership;
    if (host::detect_launch_environment().rank == 0)
      ownership.emplace(host::RunDirectoryLock::acquire(host::read_run_settings(recipe).run_directory()));
    host::Trainer trainer(recipe, *registry, host::TrainOptions{*resume, !*quiet, *headless, nullptr, *listen});
    const host::TrainSummary summary = trainer.run();
    if (!trainer.leader()) return;
    std::cerr << (summary.stopped_early ? "stopped" : "finished") << " at step " << summary.steps << " in "
              << host::format_duration(summary.seconds) << "; checkpoint " << summary.last_checkpoint.string()
              << "\n";
  });
}

const VerbRegistration registration(&register_run_verb);

}  // namespace
}  // namespace loom::cli
