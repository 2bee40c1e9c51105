// Where the host looks for plugins, in order (docs/plugin-abi.md §4, docs/plugins.md):
//   1. --plugin FILE (a failure to load is fatal) and --plugin-path DIR
//   2. the recipe's [plugins] paths
//   3. LOOM_PLUGIN_PATH (colon-separated; ignored for setuid processes)
//   4. the user directory: $XDG_DATA_HOME/loom/plugins or ~/.local/share/loom/plugins
//   5. the install's plugin directory, <executable dir>/../lib/loom/plugins
// 4 and 5 are skipped with --no-default-plugin-paths or LOOM_PLUGIN_PATH_ONLY=1. The current
// directory is never searched. Only files named libloom-<name>.so are considered, sorted by name.
#pragma once

#include <string>
#include <vector>

namespace loom::host {

/// A [plugins] path of a recipe: absolute, and where the recipe names it ("file:line:col
/// (plugins.paths[i])"), so that a missing or broken one is reported with the key to fix.
struct RecipePluginPath {
  std::string path;
  std::string named_by;
};

struct PluginSearchOptions {
  std::vector<std::string> files;                // --plugin
  std::vector<std::string> directories;          // --plugin-path
  std::vector<RecipePluginPath> recipe_paths;    // [plugins] paths (files or directories)
  bool default_paths = true;              // false: skip the user and install directories
  bool environment = true;                // read LOOM_PLUGIN_PATH / LOOM_PLUGIN_PATH_ONLY
};

struct PluginCandidate {
  std::string path;      // as found
  bool explicit_file;    // named by --plugin or a [plugins] path: failure is fatal
  std::string named_by;  // a [plugins] path's recipe key, else empty
};

/// The candidate files in discovery order (duplicates not yet removed).
std::vector<PluginCandidate> discover_plugin_files(const PluginSearchOptions& options);

/// True for names of the form libloom-<name>.so.
bool is_plugin_file_name(const std::string& file_name);

/// The directories searched, in order, for messages ("searched: ...").
std::vector<std::string> plugin_search_directories(const PluginSearchOptions& options);

}  // namespace loom::host
