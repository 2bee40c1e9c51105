// Recipes: TOML files with one table per component (docs/design.md §5).
//
// `load_recipe` parses the file (errors carry file:line:col), merges `include = [...]` files
// first (paths relative to the including file; cycles reported with the chain), lays the file's
// own keys over them, then applies `--set a.b.c=value` overrides, type-checked against the value
// they replace. Every key keeps where it came from, so any later error can point at it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "recipe/component_config.hpp"

namespace loom::host {

class Recipe {
 public:
  /// The resolved recipe (includes merged, overrides applied, `include` removed).
  const toml::table& table() const { return root_; }
  /// The top-level recipe file as given.
  const std::string& path() const { return path_; }
  /// Directory of the top-level file (relative recipe paths resolve against it).
  std::string directory() const;
  /// "file:line:col" of a dotted key, "--set key=value" for overridden keys; falls back to the
  /// nearest enclosing table, then to the file.
  std::string origin(const std::string& dotted_key) const;
  /// The resolved recipe as TOML (written to runs/<name>/recipe.resolved.toml).
  std::string to_toml() const;
  /// The options of component table `table_name` for the plugin boundary.
  ComponentConfig component_config(const std::string& table_name) const;
  /// Applies one "a.b.c=value" override; throws RecipeError.
  void apply_override(const std::string& assignment);

  friend Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides);

 private:
  /// Adds a problem, naming its origin, for every key below `node` that is not a bare TOML key.
  void collect_key_problems(const toml::node& node, const std::string& path,
                            std::vector<std::string>& problems) const;

  toml::table root_;
  std::string path_;
  std::map<std::string, std::string> origins_;
};

/// Loads a recipe file with its includes and overrides; throws RecipeError (also for a key that is
/// not a bare TOML key: letters, digits, '_' and '-').
Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace loom::host
