// Validation of a whole recipe against the loaded plugins (`loom check`, and before `loom run`).
//
// Every component table must name an available component whose options construct in dry-run
// mode; host tables ([run], [train], ...) are read with the same typed reader; unknown tables
// are reported with a suggestion. All problems are returned, not just the first.
#pragma once

#include <string>
#include <vector>

#include "plugin_loading/plugin_registry.hpp"
#include "recipe/recipe.hpp"

namespace loom::host {

/// A recipe table that selects a component of one kind ([optimizer] → optimizer/<name>).
struct ComponentSlot {
  const char* table;
  uint32_t kind;
};

/// Every component table a recipe may hold.
const std::vector<ComponentSlot>& component_slots();

/// Directories and files listed in the recipe's [plugins] paths, absolute, each with its key.
std::vector<RecipePluginPath> recipe_plugin_paths(const Recipe& recipe);

/// Every problem found, one line each ("file:line:col: key: message"); empty when valid.
std::vector<std::string> check_recipe(const Recipe& recipe, const PluginRegistry& registry);

}  // namespace loom::host
