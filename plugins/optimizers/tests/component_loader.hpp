// Loads a component of the freshly built plugins through the host registry, as a run does.
#pragma once

#include <stdexcept>
#include <string>

#include "plugin_loading/plugin_registry.hpp"

namespace loom_optim_test {

template <typename Interface>
loom::host::Component<Interface> load_component(const std::string& name, const std::string& toml = "") {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(Interface::kKind, name);
  if (entry == nullptr)
    throw std::runtime_error(std::string(Interface::kRecipeTable) + "/" + name + " not found");
  return registry.create<Interface>(*entry, {Interface::kRecipeTable, toml, "", "test.toml:1:1"}, false);
}

}  // namespace loom_optim_test
