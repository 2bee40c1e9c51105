// `loom run RECIPE [--set k=v] [--resume auto|DIR] [--listen HOST:PORT]`: validate the recipe, then
// train. --listen is [metrics] listen (the metrics stream for loom-dash).
// Ctrl-C / SIGTERM finish the current step, write a checkpoint and exit 0.
#include <iostream>

#include "cli_context.hpp"
#include "loom/host/metrics_log.hpp"
#include "loom/host/trainer.hpp"

namespace loom::cli {
namespace {

void register_run_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<RecipeArguments>();
  auto resume = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto listen = std::make_shared<std::string>();
  auto* verb = app.add_subcommand("run", "train as the recipe says");
  add_recipe_arguments(*verb, *args);
  verb->add_option("--resume", *resume,
                   "continue from a checkpoint: 'auto' (the newest) or a checkpoint directory");
  verb->add_flag("--quiet", *quiet, "no progress lines");
  verb->add_option("--listen", *listen,
                   "stream metrics to loom-dash on HOST:PORT (port 0: any free port); overrides [metrics] listen");
  add_plugin_flags(*verb, options);
  verb->callback([&options, args, resume, quiet, listen] {
    auto [recipe, registry] = load_and_check(options, *args);
    host::Trainer trainer(recipe, *registry, host::TrainOptions{*resume, !*quiet, nullptr, *listen});
    const host::TrainSummary summary = trainer.run();
    std::cerr << (summary.stopped_early ? "stopped" : "finished") << " at step " << summary.steps << " in "
              << host::format_duration(summary.seconds) << "; checkpoint " << summary.last_checkpoint.string()
              << "\n";
  });
}

const VerbRegistration registration(&register_run_verb);

}  // namespace
}  // namespace loom::cli
