// ModelRecipe: the recipe's [model] table, read and checked (docs/recipes.md).
//
//   [model]
//   config = "configs/models/bert-base.json"   # Hugging Face config.json
//   blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" },
//             "bert.pretraining-heads"]
//
// `config` is resolved against the recipe's directory, then the current directory. `repeat` is a
// positive integer or the name of an integer key of the config file. Every problem is reported
// with the recipe's file:line:col, all at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugin_loading/plugin_registry.hpp"
#include "recipe/recipe.hpp"

namespace loom::host {

/// One entry of `blocks`, with its repeat count resolved.
struct BlockUse {
  std::string component;  ///< block name without the kind ("bert.encoder-layer")
  int64_t repeat = 1;     ///< consecutive copies
  std::string origin;     ///< where the entry is in the recipe
};

struct ModelRecipe {
  std::string config_path;       ///< the config.json actually found
  std::vector<BlockUse> blocks;  ///< in order, not expanded

  /// Component names with repeats expanded: the model's block list.
  std::vector<std::string> expanded_blocks() const;
};

/// Reads [model]; throws RecipeError listing every problem.
ModelRecipe read_model_recipe(const Recipe& recipe);

/// Problems of [model] for `loom check` (also: each block component must exist in `registry`).
std::vector<std::string> check_model_recipe(const Recipe& recipe, const PluginRegistry& registry);

}  // namespace loom::host
