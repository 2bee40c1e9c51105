// Model construction from a recipe; see model_setup.hpp.
#include "model/model_setup.hpp"

#include <optional>
#include <string>

#include <fmt/format.h>

#include "loom/sdk/tokenizer.hpp"
#include "model/model_config_from_bert.hpp"
#include "model/model_recipe.hpp"
#include "recipe/errors.hpp"

namespace loom::host {

loom::DType compute_dtype_of(const loom::Precision& precision) {
  switch (precision.compute_dtype()) {
    case loom::ComputeDType::bf16:
      return loom::DType::bf16;
    case loom::ComputeDType::f16:
      return loom::DType::f16;
    case loom::ComputeDType::f32:
      break;
  }
  return loom::DType::f32;
}

loom::ActivationShape activation_shape_for(const loom::BatchLimits& limits) {
  const int64_t rows = limits.batch_size, seq = limits.max_seq_length;
  // Static masking caps predictions per row; dynamic masking may label any position.
  const int64_t per_row = limits.max_predictions > 0 ? limits.max_predictions : seq;
  return {rows, seq, limits.task == loom::BatchTask::pretraining ? rows * std::min(per_row, seq) : 0};
}

ModelSetup build_model(const Recipe& recipe, const PluginRegistry& registry,
                       const Component<loom::Backend>& backend, const loom::Precision& precision,
                       const loom::BatchLimits* limits, const loom::Tokenizer* tokenizer) {
  const ModelRecipe model_recipe = read_model_recipe(recipe);
  ModelSetup setup;
  setup.bert_config = read_bert_config(model_recipe.config_path);
  if (tokenizer != nullptr && tokenizer->vocab_size() > setup.bert_config.vocab_size)
    throw RecipeError(fmt::format(
        "{}: vocab_size {} is smaller than the [tokenizer] vocabulary ({} tokens); use a model config whose "
        "vocab_size is at least {}, or the vocabulary the model was made for",
        model_recipe.config_path, setup.bert_config.vocab_size, tokenizer->vocab_size(),
        tokenizer->vocab_size()));
  if (limits != nullptr && limits->task == loom::BatchTask::classification && limits->num_labels > 0)
    setup.bert_config.extra["num_labels"] = limits->num_labels;
  setup.model_config = to_model_config(setup.bert_config, model_recipe.config_path);
  setup.model = std::make_unique<Model>(registry, model_recipe.expanded_blocks(), setup.model_config, backend,
                                        compute_dtype_of(precision), bert_config_to_json(setup.bert_config).dump(),
                                        model_recipe.config_path);
  // [model] unpadded (run_settings.cpp checks it): the layers that accept packed tokens run on real
  // tokens only.
  setup.model->set_unpadded(recipe.table()["model"]["unpadded"].value_or(true));
  return setup;
}

void check_sequence_length(const Recipe& recipe, const std::string& table, const loom::BatchLimits& limits) {
  const std::string config_path = read_model_recipe(recipe).config_path;
  const int64_t positions = read_bert_config(config_path).max_position_embeddings;
  if (limits.max_seq_length <= positions) return;
  const std::optional<std::string> files = recipe.table()[table]["files"].value<std::string>();
  const std::string source =
      files ? fmt::format("{}.files = \"{}\"", table, *files)
            : fmt::format("{}.max_seq_length, or its default when the recipe sets none", table);
  throw RecipeError(
      fmt::format("[{}]: its sequences are up to {} tokens long ({}), longer than the model's "
                  "max_position_embeddings = {} ({}); use data of at most {} tokens, or a model with more "
                  "positions",
                  table, limits.max_seq_length, source, positions, config_path, positions));
}

DatasetModel build_model_for_dataset(const Recipe& recipe, const PluginRegistry& registry,
                                     const Component<loom::Backend>& backend,
                                     const loom::Precision& precision, Component<loom::Dataset>& data,
                                     const loom::DatasetSetup& data_setup) {
  DatasetModel d;
  data.call([&](loom::Dataset& dataset) { dataset.open(data_setup); });
  d.limits = data.call([](loom::Dataset& dataset) { return dataset.limits(); });
  d.setup = build_model(recipe, registry, backend, precision, &d.limits, data_setup.tokenizer);
  const loom::ActivationShape shape = activation_shape_for(d.limits);
  d.setup.model->reserve(shape);
  d.staging = std::make_unique<BatchStaging>(*backend.get(), shape, d.setup.model_config.pad_token_id);
  d.buffers = std::make_unique<HostBatchBuffers>(d.limits);
  return d;
}

}  // namespace loom::host
