// `loom check RECIPE`: load the recipe, resolve and validate every component (dry run), print
// every problem at once (load_and_check, cli_context.hpp, throws RecipeError with all of them).
#include <iostream>

#include "cli_context.hpp"

namespace loom::cli {
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
