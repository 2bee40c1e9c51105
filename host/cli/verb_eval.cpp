// `loom eval RECIPE --checkpoint DIR`: the recipe's model with a checkpoint's weights, evaluated on
// [eval_data] (or [data] when there is none), without dropout. Prints the metrics as JSON. On
// SQuAD data it also writes predictions.json, nbest_predictions.json (and null_odds.json for
// v2.0) into --output-dir, by default the recipe's run directory, and prints EM/F1. A
// classification split numbers its classes by the checkpoint's id2label (train/task_labels.hpp).
#include <filesystem>
#include <iostream>

#include "cli_context.hpp"
#include "eval/evaluator.hpp"
#include "eval/finite_outputs.hpp"
#include "model/batch_staging.hpp"
#include "model/host_batch_buffers.hpp"
#include "model/model_setup.hpp"
#include "recipe/run_settings.hpp"
#include "train/run_checkpoint.hpp"
#include "train/run_components.hpp"
#include "train/task_labels.hpp"

namespace loom::cli {
namespace {

// id2label of the checkpoint's config.json; none when it has no config.json (a bare weights
// directory) or its classes are unnamed.
host::TaskLabels checkpoint_task_labels(const std::string& checkpoint) {
  const std::filesystem::path config = std::filesystem::path(checkpoint) / "config.json";
  if (!std::filesystem::exists(config)) return {};
  return host::config_task_labels(host::read_bert_config(config), config.string() + " id2label");
}

void register_eval_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<RecipeArguments>();
  auto checkpoint = std::make_shared<std::string>();
  auto batches = std::make_shared<uint64_t>(0);
  auto output_dir = std::make_shared<std::string>();
  auto* verb = app.add_subcommand("eval", "evaluate a checkpoint on the recipe's evaluation data");
  add_recipe_arguments(*verb, *args);
  verb->add_option("--checkpoint", *checkpoint, "checkpoint (or Hugging Face model) directory")->required();
  verb->add_option("--batches", *batches, "evaluate at most this many batches (0: all)");
  verb->add_option("--output-dir", *output_dir,
                   "SQuAD: where predictions.json and the n-best go (default: the recipe's run directory)");
  add_plugin_flags(*verb, options);
  verb->callback([&options, args, checkpoint, batches, output_dir] {
    auto [recipe, registry] = load_and_check(options, *args);
    const host::RunSettings settings = host::read_run_settings(recipe);
    const bool has_eval = recipe.table().contains("eval_data");
    host::RunComponents c = host::create_run_components(recipe, *registry, {!has_eval, false});
    host::Component<loom::Dataset>& data = has_eval ? c.eval_data : c.data;
    const loom::DatasetSetup setup{0, 1, settings.seed, c.tokenizer ? c.tokenizer.get() : nullptr};
    loom::Backend& backend = *c.backend.get();
    // The classes the checkpoint was trained with (its id2label), by name, for the data too.
    const host::TaskLabels task_labels = checkpoint_task_labels(*checkpoint);
    host::hand_task_labels(data, task_labels);
    const host::DatasetModel run =
        host::build_model_for_dataset(recipe, *registry, c.backend, *c.precision.get(), data, setup);
    host::check_sequence_length(recipe, has_eval ? "eval_data" : "data", run.limits);
    if (!task_labels.names.empty())
      host::check_split_labels(data, has_eval ? "eval_data" : "data", task_labels,
                               static_cast<int32_t>(task_labels.names.size()));
    const host::CheckpointLoadReport report = host::load_model_weights(run.model(), *checkpoint, {true, {}});
    if (!report.unexpected.empty())
      std::cerr << *checkpoint << ": " << report.unexpected.size() << " tensors the model does not use\n";
    const std::optional<int32_t> mask_id = host::mask_token_id(c);
    std::optional<host::SquadEvaluation> squad;
    if (run.buffers->limits().task == loom::BatchTask::span_extraction && c.tokenizer)
      squad.emplace(*c.tokenizer.get(), host::squad_decode_options(settings),
                    output_dir->empty() ? settings.run_directory() : std::filesystem::path(*output_dir));
    nlohmann::json metrics = data.call([&](loom::Dataset& d) {
      return host::evaluate(run.model(), backend, *run.staging, d, *run.buffers, *batches, mask_id,
                            squad ? &*squad : nullptr);
    });
    host::refuse_nonfinite_evaluation(metrics, *checkpoint);
    metrics["checkpoint"] = *checkpoint;
    std::cout << metrics.dump(2) << "\n";
  });
}

const VerbRegistration registration(&register_eval_verb);

}  // namespace
}  // namespace loom::cli
