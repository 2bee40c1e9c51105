// The set of plugins a process has loaded and the components they provide.
//
// Construction discovers and loads plugin files (plugin_search_path.hpp): a file named
// explicitly that fails to load throws PluginLoadError; a scanned file that fails is recorded in
// `refused()` and skipped. A plugin name seen again later in the search order is shadowed by the
// first. Two plugins providing the same component is a conflict: recorded, and using that
// component is an error naming both files. Components created here hold their library alive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "plugin_loading/component.hpp"
#include "plugin_loading/plugin_library.hpp"
#include "plugin_loading/plugin_search_path.hpp"
#include "recipe/component_config.hpp"

namespace loom::host {

struct RefusedPlugin {
  std::string path;
  std::string reason;
};

struct ComponentEntry {
  uint32_t kind;
  std::string name;  // without the kind
  const loom_component_desc* descriptor;
  std::shared_ptr<PluginLibrary> plugin;
  std::string full_name() const;  // "kind/name"
  /// The component's query_interface: nullptr when it offers no named interface, or when its
  /// descriptor predates the field (a plugin built before SDK 0.3).
  loom_query_interface_fn interfaces() const;
};

struct ComponentConflict {
  std::string component;  // "kind/name"
  std::string first_path;
  std::string second_path;
  std::string message() const;
};

class PluginRegistry {
 public:
  explicit PluginRegistry(const PluginSearchOptions& options);

  const std::vector<std::shared_ptr<PluginLibrary>>& plugins() const { return plugins_; }
  const std::vector<RefusedPlugin>& refused() const { return refused_; }
  const std::vector<ComponentConflict>& conflicts() const { return conflicts_; }
  const std::vector<std::string>& searched_directories() const { return searched_; }

  /// The component `kind/name`; nullptr when none. Throws PluginLoadError when it is in conflict.
  const ComponentEntry* find(uint32_t kind, const std::string& name) const;
  /// Names (without kind) of every available component of a kind, sorted.
  std::vector<std::string> names_of_kind(uint32_t kind) const;

  /// Creates a component; option problems throw RecipeError, other failures PluginError.
  template <typename Interface>
  Component<Interface> create(const ComponentEntry& entry, const ComponentConfig& config,
                              bool dry_run) const {
    std::shared_ptr<void> object = create_object(entry, config, dry_run);
    return Component<Interface>(std::shared_ptr<Interface>(object, static_cast<Interface*>(object.get())),
                                entry.plugin->name(), entry.full_name(), entry.interfaces());
  }

 private:
  std::shared_ptr<void> create_object(const ComponentEntry& entry, const ComponentConfig& config,
                                      bool dry_run) const;
  void add(std::shared_ptr<PluginLibrary> plugin);

  std::vector<std::shared_ptr<PluginLibrary>> plugins_;
  std::vector<ComponentEntry> components_;
  std::vector<RefusedPlugin> refused_;
  std::vector<ComponentConflict> conflicts_;
  std::vector<std::string> searched_;
};

}  // namespace loom::host
