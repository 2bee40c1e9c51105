// Building the model a recipe describes: [model] config + blocks, the precision's compute dtype,
// and the task's label count (a classification dataset decides num_labels). Shared by `loom run`,
// `eval`, `predict` and `bench`.
#pragma once

#include <memory>

#include "loom/host/bert_config.hpp"
#include "loom/host/model.hpp"
#include "loom/host/plugin_registry.hpp"
#include "loom/host/recipe.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/precision.hpp"

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
ModelSetup build_model(const Recipe& recipe, const PluginRegistry& registry, loom::Backend& backend,
                       const loom::Precision& precision, const loom::BatchLimits* limits);

}  // namespace loom::host
