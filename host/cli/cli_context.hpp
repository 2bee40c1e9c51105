// Options shared by every `loom` verb and the registry built from them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plugin_loading/plugin_registry.hpp"
#include "recipe/recipe.hpp"

namespace loom::cli {

struct GlobalOptions {
  std::vector<std::string> plugin_files;
  std::vector<std::string> plugin_directories;
  bool no_default_plugin_paths = false;
  std::string log_level = "warn";
};

/// Adds the plugin-discovery flags to a (sub)command.
void add_plugin_flags(CLI::App& command, GlobalOptions& options);

/// Loads plugins per the flags, the recipe's [plugins] table (when given) and the environment.
std::unique_ptr<host::PluginRegistry> make_registry(const GlobalOptions& options, const host::Recipe* recipe);

/// The tokens per row `loom predict` runs a checkpoint with: `requested` when it fits the model's
/// position table; a default above it is capped there (a small model keeps working without the
/// flag), a --max-seq-length the user gave above it is refused (InputError naming both).
int64_t checkpoint_sequence_length(int64_t requested, bool given, int64_t max_position_embeddings,
                                   const std::string& checkpoint);

/// The recipe argument and `--set` overrides of verbs that take a recipe.
struct RecipeArguments {
  std::string recipe;
  std::vector<std::string> overrides;
};

/// Adds RECIPE and --set to a verb.
void add_recipe_arguments(CLI::App& verb, RecipeArguments& args);

/// Loads the recipe, builds the registry and validates everything; throws RecipeError with every
/// problem (exit 2). The registry is returned for the verb to create components from.
std::pair<host::Recipe, std::unique_ptr<host::PluginRegistry>> load_and_check(const GlobalOptions& options,
                                                                              const RecipeArguments& args);

/// A verb adds its subcommand(s) to the app. Each verb_*.cpp registers one at static
/// initialisation with `const VerbRegistration registration(&register_x);`.
using VerbRegistrar = void (*)(CLI::App& app, GlobalOptions& options);

struct VerbRegistration {
  explicit VerbRegistration(VerbRegistrar registrar);
};

/// Every registered verb, in registration order.
const std::vector<VerbRegistrar>& registered_verbs();

}  // namespace loom::cli
