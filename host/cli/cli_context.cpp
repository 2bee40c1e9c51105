// Plugin flags and registry construction shared by the verbs.
#include "cli_context.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "recipe/errors.hpp"

#include "train/recipe_check.hpp"

namespace loom::cli {

void add_plugin_flags(CLI::App& command, GlobalOptions& options) {
  command.add_option("--plugin", options.plugin_files, "load this plugin file (failure is fatal)");
  command.add_option("--plugin-path", options.plugin_directories, "search this directory for plugins");
  command.add_flag("--no-default-plugin-paths", options.no_default_plugin_paths,
                   "do not search the user and install plugin directories");
}

int64_t checkpoint_sequence_length(int64_t requested, bool given, int64_t max_position_embeddings,
                                   const std::string& checkpoint) {
  if (given && requested > max_position_embeddings)
    throw host::InputError(fmt::format(
        "--max-seq-length {} is above the {} positions of {}/config.json (max_position_embeddings); give at most {}",
        requested, max_position_embeddings, checkpoint, max_position_embeddings));
  return std::min(requested, max_position_embeddings);
}

std::unique_ptr<host::PluginRegistry> make_registry(const GlobalOptions& options,
                                                    const host::Recipe* recipe) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  host::PluginSearchOptions search;
  search.files = options.plugin_files;
  search.directories = options.plugin_directories;
  search.default_paths = !options.no_default_plugin_paths;
  if (recipe != nullptr) search.recipe_paths = host::recipe_plugin_paths(*recipe);
  return std::make_unique<host::PluginRegistry>(search);
}

void add_recipe_arguments(CLI::App& verb, RecipeArguments& args) {
  verb.add_option("recipe", args.recipe, "recipe file (TOML)")->required();
  verb.add_option("--set", args.overrides, "override a recipe value: --set optimizer.lr=1e-3");
}

std::pair<host::Recipe, std::unique_ptr<host::PluginRegistry>> load_and_check(const GlobalOptions& options,
                                                                              const RecipeArguments& args) {
  host::Recipe recipe = host::load_recipe(args.recipe, args.overrides);
  auto registry = make_registry(options, &recipe);
  std::vector<std::string> problems = host::check_recipe(recipe, *registry);
  if (!problems.empty()) {
    problems.push_back(
        fmt::format("{} problem{} in {}", problems.size(), problems.size() == 1 ? "" : "s", args.recipe));
    throw host::RecipeError(problems);
  }
  return {std::move(recipe), std::move(registry)};
}

namespace {
std::vector<VerbRegistrar>& verb_list() {
  static std::vector<VerbRegistrar> verbs;
  return verbs;
}
}  // namespace

VerbRegistration::VerbRegistration(VerbRegistrar registrar) {
  verb_list().push_back(registrar);
}

const std::vector<VerbRegistrar>& registered_verbs() {
  return verb_list();
}

}  // namespace loom::cli
