// `loom check RECIPE`: load the recipe, resolve and validate every component (dry run), print
// every problem at once.
#include <iostream>

#include <fmt/format.h>

#include "cli_context.hpp"
#include "loom/host/errors.hpp"
#include "loom/host/recipe_check.hpp"

namespace loom::cli {
namespace {

struct RecipeArguments {
  std::string recipe;
  std::vector<std::string> overrides;
};

void add_recipe_arguments(CLI::App& verb, RecipeArguments& args) {
  verb.add_option("recipe", args.recipe, "recipe file (TOML)")->required();
  verb.add_option("--set", args.overrides, "override a recipe value: --set optimizer.lr=1e-3");
}

// Loads and validates; throws RecipeError with every problem.
host::Recipe load_and_check(const GlobalOptions& options, const RecipeArguments& args) {
  host::Recipe recipe = host::load_recipe(args.recipe, args.overrides);
  auto registry = make_registry(options, &recipe);
  std::vector<std::string> problems = host::check_recipe(recipe, *registry);
  if (!problems.empty()) {
    problems.push_back(
        fmt::format("{} problem{} in {}", problems.size(), problems.size() == 1 ? "" : "s", args.recipe));
    throw host::RecipeError(problems);
  }
  return recipe;
}

}  // namespace

namespace {

void register_check_verbs(CLI::App& app, GlobalOptions& options) {
  auto check_args = std::make_shared<RecipeArguments>();
  auto* check = app.add_subcommand("check", "validate a recipe and every component's options");
  add_recipe_arguments(*check, *check_args);
  add_plugin_flags(*check, options);
  check->callback([&options, check_args] {
    load_and_check(options, *check_args);
    std::cout << check_args->recipe << ": ok\n";
  });
}

const VerbRegistration registration(&register_check_verbs);

}  // namespace
}  // namespace loom::cli
