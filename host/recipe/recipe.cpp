// Recipe loading, include composition and origins; see recipe.hpp. Overrides: recipe_override.cpp.
#include "recipe/recipe.hpp"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "recipe/errors.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

using Origins = std::map<std::string, std::string>;

std::string location(const toml::source_region& source, const std::string& fallback_path) {
  const std::string file = source.path ? *source.path : fallback_path;
  return fmt::format("{}:{}:{}", file, source.begin.line, source.begin.column);
}

std::string join_key(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

void record_origins(const toml::table& table, const std::string& prefix, const std::string& file,
                    Origins& out) {
  for (const auto& [key, node] : table) {
    const std::string path = join_key(prefix, key.str());
    // Values point at their key; a [table] points at its header.
    const toml::source_region& source =
        node.is_table() || key.source().begin.line == 0 ? node.source() : key.source();
    out[path] = location(source, file);
    if (const toml::table* sub = node.as_table()) record_origins(*sub, path, file, out);
  }
}

void erase_subtree(Origins& origins, const std::string& path) {
  for (auto it = origins.begin(); it != origins.end();) {
    if (it->first == path || it->first.rfind(path + ".", 0) == 0)
      it = origins.erase(it);
    else
      ++it;
  }
}

void copy_subtree(const Origins& from, Origins& to, const std::string& path) {
  for (const auto& [key, value] : from)
    if (key == path || key.rfind(path + ".", 0) == 0) to[key] = value;
}

// Lays `src` over `dst`: tables merge key by key, anything else replaces.
void merge(toml::table& dst, Origins& dst_origins, const toml::table& src, const Origins& src_origins,
           const std::string& prefix) {
  for (const auto& [key, node] : src) {
    const std::string path = join_key(prefix, key.str());
    toml::node* existing = dst.get(key.str());
    if (existing != nullptr && existing->is_table() && node.is_table()) {
      if (auto it = src_origins.find(path); it != src_origins.end()) dst_origins[path] = it->second;
      merge(*existing->as_table(), dst_origins, *node.as_table(), src_origins, path);
      continue;
    }
    dst.insert_or_assign(key.str(), node);
    erase_subtree(dst_origins, path);
    copy_subtree(src_origins, dst_origins, path);
  }
}

struct LoadedFile {
  toml::table table;
  Origins origins;
};

LoadedFile load_file(const std::string& path, std::vector<std::string>& chain,
                     const std::string& included_from) {
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(path, error);
  if (!fs::exists(path, error))
    throw RecipeError(
        fmt::format("{}{}: recipe file not found", included_from.empty() ? "" : included_from + ": ", path));
  // The TOML reader reads a folder as an empty recipe, which `loom check` would call valid.
  if (fs::is_directory(path, error))
    throw RecipeError(fmt::format("{}{}: is a folder, not a recipe file",
                                  included_from.empty() ? "" : included_from + ": ", path));
  for (const auto& open : chain) {
    if (open == canonical.string()) {
      std::string cycle;
      for (const auto& c : chain) cycle += c + " -> ";
      throw RecipeError(fmt::format("{}: include cycle: {}{}", included_from, cycle, canonical.string()));
    }
  }
  LoadedFile own;
  try {
    own.table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw RecipeError(fmt::format("{}: syntax error: {}", location(e.source(), path), e.description()));
  }
  record_origins(own.table, "", path, own.origins);

  LoadedFile result;
  if (const toml::node* include = own.table.get("include")) {
    const std::string include_origin = own.origins["include"];
    std::vector<std::string> files;
    if (const auto* single = include->as_string()) {
      files.push_back(single->get());
    } else if (const toml::array* list = include->as_array()) {
      for (const auto& item : *list) {
        if (!item.is_string())
          throw RecipeError(include_origin + ": include: expected an array of file names (strings)");
        files.push_back(*item.value<std::string>());
      }
    } else {
      throw RecipeError(include_origin + ": include: expected an array of file names (strings)");
    }
    chain.push_back(canonical.string());
    for (const auto& file : files) {
      const fs::path target =
          fs::path(file).is_absolute() ? fs::path(file) : fs::path(path).parent_path() / file;
      LoadedFile included = load_file(target.string(), chain, include_origin);
      merge(result.table, result.origins, included.table, included.origins, "");
    }
    chain.pop_back();
    own.table.erase("include");
    erase_subtree(own.origins, "include");
  }
  merge(result.table, result.origins, own.table, own.origins, "");
  return result;
}

/// A bare TOML key: letters, digits, '_' and '-', as every key Loom reads. A quoted key ("a b",
/// "it's") names nothing a component or the host reads, and one holding a single quote would not
/// even survive recipe.resolved.toml (toml++ writes it unquoted, so the file would not parse).
bool bare_key(std::string_view key) {
  if (key.empty()) return false;
  for (const char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

/// The key as written for a message: in double quotes, bytes outside printable ASCII as '?'.
std::string shown_key(std::string_view key) {
  std::string shown = "\"";
  for (const char c : key) shown += c >= 0x20 && c < 0x7f ? c : '?';
  return shown + "\"";
}

}  // namespace

/// Every key below `node` (tables, arrays of tables, inline tables) that is not bare, as a problem
/// naming where it came from.
void Recipe::collect_key_problems(const toml::node& node, const std::string& path,
                                  std::vector<std::string>& problems) const {
  if (const toml::table* table = node.as_table()) {
    for (const auto& [key, value] : *table) {
      const std::string child = join_key(path, key.str());
      if (!bare_key(key.str()))
        problems.push_back(fmt::format("{}: the key {} is not one Loom reads: recipe keys are letters, digits, "
                                       "'_' and '-'", origin(child), shown_key(key.str())));
      else
        collect_key_problems(value, child, problems);
    }
  } else if (const toml::array* array = node.as_array()) {
    for (const toml::node& element : *array) collect_key_problems(element, path, problems);
  }
}

Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides) {
  std::vector<std::string> chain;
  LoadedFile loaded = load_file(path, chain, "");
  Recipe recipe;
  recipe.root_ = std::move(loaded.table);
  recipe.origins_ = std::move(loaded.origins);
  recipe.path_ = path;
  std::vector<std::string> problems;
  for (const auto& assignment : overrides) {
    try {
      recipe.apply_override(assignment);
    } catch (const RecipeError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  recipe.collect_key_problems(recipe.root_, "", problems);
  if (!problems.empty()) throw RecipeError(problems);
  return recipe;
}

std::string Recipe::directory() const {
  return fs::path(path_).parent_path().string();
}

std::string Recipe::origin(const std::string& dotted_key) const {
  std::string key = dotted_key;
  while (!key.empty()) {
    if (auto it = origins_.find(key); it != origins_.end()) return it->second;
    const size_t dot = key.rfind('.');
    key = dot == std::string::npos ? "" : key.substr(0, dot);
  }
  return path_;
}

std::string Recipe::to_toml() const {
  std::ostringstream out;
  out << toml::toml_formatter{root_} << "\n";
  return out.str();
}

ComponentConfig Recipe::component_config(const std::string& table_name) const {
  ComponentConfig config;
  config.table_name = table_name;
  config.table_origin = origin(table_name);
  toml::table options;
  if (const toml::table* table = root_[table_name].as_table()) options = *table;
  // A table written inline (`name = { ... }`) keeps that flag when copied, and an inline root
  // would print as `{ ... }`, which is not a TOML document.
  options.is_inline(false);
  options.erase("component");
  options.erase("plugin");
  std::ostringstream out;
  out << toml::toml_formatter{options};
  config.toml = out.str();
  const std::string prefix = table_name + ".";
  for (const auto& [key, where] : origins_)
    if (key.rfind(prefix, 0) == 0) config.origins += key.substr(prefix.size()) + "\t" + where + "\n";
  return config;
}

}  // namespace loom::host
