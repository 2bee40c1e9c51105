// Building the model a recipe describes: [model] config + blocks, the precision's compute dtype,
// and the task's label count (a classification dataset decides num_labels). Shared by `loom run`,
// `eval`, `predict` and `bench`.
#pragma once

#include <memory>

#include "loom/sdk/dataset.hpp"
#include "loom/sdk/precision.hpp"
#include "model/batch_staging.hpp"
#include "model/bert_config.hpp"
#include "model/host_batch_buffers.hpp"
#include "model/model.hpp"
#include "plugin_loading/component.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "recipe/recipe.hpp"

namespace loom::host {

struct ModelSetup {
  BertConfig bert_config;  ///< as read (num_labels set for classification), written into checkpoints
  loom::ModelConfig model_config{};  ///< what blocks see
  std::unique_ptr<Model> model;
};

/// Compute dtype of a precision policy.
loom::DType compute_dtype_of(const loom::Precision& precision);

/// The activation shape a dataset's largest batch needs.
loom::ActivationShape activation_shape_for(const loom::BatchLimits& limits);

/// Reads [model], creates and sets up every block. `limits` may be nullptr (no dataset).
/// With a `tokenizer`, a vocabulary larger than the config's vocab_size is a RecipeError naming both
/// (its ids past the embedding table would be out of range).
ModelSetup build_model(const Recipe& recipe, const PluginRegistry& registry,
                       const Component<loom::Backend>& backend, const loom::Precision& precision,
                       const loom::BatchLimits* limits, const loom::Tokenizer* tokenizer = nullptr);

/// Throws RecipeError naming `table` ("data", "eval_data"), the model config and both lengths when
/// the dataset's batches (`limits`, after open) hold sequences longer than the config's
/// max_position_embeddings: refused before anything runs instead of failing in the embeddings at
/// the first such batch (shards prepared for longer sequences, a dataset's default length).
void check_sequence_length(const Recipe& recipe, const std::string& table, const loom::BatchLimits& limits);

/// A model for one dataset's batches: built for its limits, activations reserved, and the device
/// staging and host buffers those batches need. What `loom eval` and `loom bench` set up alike.
struct DatasetModel {
  ModelSetup setup;
  loom::BatchLimits limits{};
  std::unique_ptr<BatchStaging> staging;
  std::unique_ptr<HostBatchBuffers> buffers;

  Model& model() const { return *setup.model; }
};

/// Opens `data` with `data_setup`, then builds the recipe's model for its batches.
DatasetModel build_model_for_dataset(const Recipe& recipe, const PluginRegistry& registry,
                                     const Component<loom::Backend>& backend,
                                     const loom::Precision& precision, Component<loom::Dataset>& data,
                                     const loom::DatasetSetup& data_setup);

}  // namespace loom::host
