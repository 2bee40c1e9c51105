// libFuzzer target for the recipe loader and what `loom check` does with a recipe before any plugin
// is asked (recipe/recipe.hpp, recipe/run_settings.hpp, train/recipe_check.hpp): TOML parsing,
// includes, `--set` overrides, origins, the host tables, [model] with its config.json, and the
// component tables against a registry without plugins. The input holds up to four parts separated
// by lines "%%": recipe.toml, included.toml (for `include = "included.toml"`), model.json (for
// `[model] config = "model.json"`) and `--set` assignments, one a line. Properties:
// - load_recipe refuses with RecipeError only; a loaded recipe's origins and component tables are
//   answered for every table, and its resolved TOML (recipe.resolved.toml) parses again;
// - read_run_settings refuses with RecipeError only, and what it accepts is a usable run name and
//   metrics address;
// - check_recipe reports problems as lines and throws nothing.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "fuzz_support.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "recipe/errors.hpp"
#include "recipe/recipe.hpp"
#include "recipe/run_settings.hpp"
#include "train/recipe_check.hpp"

namespace fs = std::filesystem;
using loom_fuzz::require;

namespace {

// No plugin is loaded: no search path, not even the environment's.
const loom::host::PluginRegistry& empty_registry() {
  static const auto registry = [] {
    loom::host::PluginSearchOptions options;
    options.default_paths = false;
    options.environment = false;
    return std::make_unique<loom::host::PluginRegistry>(options);
  }();
  return *registry;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

void check_loaded(const loom::host::Recipe& recipe) {
  try {
    (void)toml::parse(recipe.to_toml());
  } catch (const toml::parse_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    require(false, "the resolved recipe parses again");
  }
  for (const auto& [key, node] : recipe.table()) {
    const std::string table(key.str());
    require(!recipe.origin(table).empty(), "every table has an origin");
    const loom::host::ComponentConfig config = recipe.component_config(table);
    (void)toml::parse(config.toml);
  }
  (void)loom::host::recipe_plugin_paths(recipe);
  try {
    const loom::host::RunSettings settings = loom::host::read_run_settings(recipe);
    require(loom::host::run_name_problem(settings.name).empty(), "an accepted run name is usable");
    require(loom::host::metrics_listen_problem(settings.metrics_listen, settings.metrics_token).empty(),
            "an accepted metrics address is usable");
  } catch (const loom::host::RecipeError&) {
  }
  for (const std::string& problem : loom::host::check_recipe(recipe, empty_registry()))
    require(!problem.empty(), "a problem says something");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = loom_fuzz::split_parts(std::string_view(reinterpret_cast<const char*>(data), size), "%%");
  const fs::path directory = loom_fuzz::scratch_directory() / "recipes";
  fs::remove_all(directory);
  fs::create_directories(directory);
  const char* names[] = {"recipe.toml", "included.toml", "model.json"};
  for (std::size_t i = 0; i < parts.size() && i < std::size(names); ++i) {
    std::ofstream out(directory / names[i], std::ios::binary);
    out.write(parts[i].data(), static_cast<std::streamsize>(parts[i].size()));
  }
  const std::vector<std::string> overrides = parts.size() > 3 ? lines_of(parts[3]) : std::vector<std::string>{};
  std::unique_ptr<loom::host::Recipe> recipe;
  try {
    recipe = std::make_unique<loom::host::Recipe>(loom::host::load_recipe((directory / names[0]).string(), overrides));
  } catch (const loom::host::RecipeError&) {
    return 0;
  }
  check_loaded(*recipe);
  return 0;
}
