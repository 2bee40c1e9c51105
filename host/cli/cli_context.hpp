// Options shared by every `loom` verb and the registry built from them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "loom/host/plugin_registry.hpp"
#include "loom/host/recipe.hpp"

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

void register_plugins_verb(CLI::App& app, GlobalOptions& options);
void register_check_verbs(CLI::App& app, GlobalOptions& options);

}  // namespace loom::cli
