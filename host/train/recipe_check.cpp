// Whole-recipe validation; see recipe_check.hpp.
#include "train/recipe_check.hpp"

#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "recipe/errors.hpp"
#include "model/model_recipe.hpp"
#include "recipe/run_settings.hpp"
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/options.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

std::vector<std::string> problems_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const RecipeError& e) {
    return e.problems();
  } catch (const std::exception& e) {
    return {e.what()};
  }
  return {};
}

void check_component(const Recipe& recipe, const PluginRegistry& registry, const ComponentSlot& slot,
                     std::vector<std::string>& problems) {
  const std::string table = slot.table;
  const toml::node* selector = recipe.table()[table]["component"].node();
  if (selector == nullptr || !selector->is_string()) {
    problems.push_back(fmt::format("{}: {}.component: {} (available: {})",
                                   recipe.origin(table + ".component"), table,
                                   selector == nullptr ? "missing required key" : "expected a string",
                                   fmt::join(registry.names_of_kind(slot.kind), ", ")));
    return;
  }
  const std::string name = *selector->value<std::string>();
  const ComponentEntry* entry = nullptr;
  try {
    entry = registry.find(slot.kind, name);
  } catch (const PluginLoadError& e) {
    problems.push_back(
        fmt::format("{}: {}.component: {}", recipe.origin(table + ".component"), table, e.reason()));
    return;
  }
  if (entry == nullptr) {
    const std::vector<std::string> available = registry.names_of_kind(slot.kind);
    problems.push_back(
        fmt::format("{}: {}.component: no component {}/{} is available{} (available: {}; searched: {})",
                    recipe.origin(table + ".component"), table, loom::kind_name(slot.kind), name,
                    loom::Options::suggestion(name, available),
                    available.empty() ? "none" : fmt::format("{}", fmt::join(available, ", ")),
                    fmt::join(registry.searched_directories(), ", ")));
    return;
  }
  const ComponentConfig config = recipe.component_config(table);
  auto found = problems_of([&] { registry.create<void>(*entry, config, /*dry_run=*/true); });
  problems.insert(problems.end(), found.begin(), found.end());
}

}  // namespace

const std::vector<ComponentSlot>& component_slots() {
  static const std::vector<ComponentSlot> slots = {
      {"backend", LOOM_KIND_BACKEND},
      {"precision", LOOM_KIND_PRECISION},
      {"communicator", LOOM_KIND_COMMUNICATOR},
      {"tokenizer", LOOM_KIND_TOKENIZER},
      {"data", LOOM_KIND_DATASET},
      {"eval_data", LOOM_KIND_DATASET},
      {"optimizer", LOOM_KIND_OPTIMIZER},
      {"schedule", LOOM_KIND_SCHEDULE},
  };
  return slots;
}

std::vector<RecipePluginPath> recipe_plugin_paths(const Recipe& recipe) {
  std::vector<RecipePluginPath> paths;
  if (const toml::array* list = recipe.table()["plugins"]["paths"].as_array())
    for (size_t i = 0; i < list->size(); ++i)
      if (auto text = (*list)[i].value<std::string>()) {
        const fs::path path =
            fs::path(*text).is_absolute() ? fs::path(*text) : fs::path(recipe.directory()) / *text;
        paths.push_back({fs::absolute(path).lexically_normal().string(),
                         fmt::format("{} (plugins.paths[{}])", recipe.origin("plugins.paths"), i)});
      }
  return paths;
}

std::vector<std::string> check_recipe(const Recipe& recipe, const PluginRegistry& registry) {
  std::vector<std::string> problems;
  std::vector<std::string> known_tables;
  for (const auto& slot : component_slots()) known_tables.emplace_back(slot.table);
  for (const auto& [name, reader] : host_table_readers()) known_tables.push_back(name);

  for (const auto& [key, node] : recipe.table()) {
    const std::string table(key.str());
    if (!node.is_table()) {
      problems.push_back(fmt::format("{}: '{}': expected a table ([{}]), got a value{}", recipe.origin(table),
                                     table, table, loom::Options::suggestion(table, known_tables)));
      continue;
    }
    bool handled = false;
    for (const auto& slot : component_slots()) {
      if (table != slot.table) continue;
      check_component(recipe, registry, slot, problems);
      handled = true;
    }
    for (const auto& [name, reader] : host_table_readers()) {
      if (table != name) continue;
      const ComponentConfig config = recipe.component_config(table);
      // Named, not captured as a structured binding: clang before 16 (the fuzz targets' compiler)
      // cannot capture one.
      const HostTableReader& read_table = reader;
      auto found = problems_of([&] {
        loom::Options options(config.toml, config.origins, config.table_origin, table);
        RunSettings ignored;
        read_table(options, ignored);
        try {
          options.finish();
        } catch (const loom::ConfigError& e) {
          throw RecipeError(e.what());
        }
      });
      // ConfigError carries all problems joined by newlines; keep them one per entry.
      for (const auto& p : found) {
        size_t start = 0;
        while (start < p.size()) {
          const size_t end = std::min(p.find('\n', start), p.size());
          problems.push_back(p.substr(start, end - start));
          start = end + 1;
        }
      }
      if (table == "model") {
        const std::vector<std::string> model_problems = check_model_recipe(recipe, registry);
        problems.insert(problems.end(), model_problems.begin(), model_problems.end());
      }
      handled = true;
    }
    if (!handled)
      problems.push_back(fmt::format("{}: unknown table [{}]{}", recipe.origin(table), table,
                                     loom::Options::suggestion(table, known_tables)));
  }

  if (const toml::array* required = recipe.table()["plugins"]["require"].as_array()) {
    for (const auto& item : *required) {
      const std::string name = item.value<std::string>().value_or("");
      bool loaded = false;
      for (const auto& plugin : registry.plugins()) loaded = loaded || plugin->name() == name;
      if (!loaded)
        problems.push_back(fmt::format("{}: plugins.require: plugin '{}' was not found (searched: {})",
                                       recipe.origin("plugins.require"), name,
                                       fmt::join(registry.searched_directories(), ", ")));
    }
  }
  return problems;
}

}  // namespace loom::host
