// Creates a precision policy from the freshly built plugin through the host registry.
#pragma once

#include <stdexcept>
#include <string>

#include "plugin_loading/plugin_registry.hpp"
#include "loom/sdk/precision.hpp"

namespace loom_precision_test {

inline loom::host::Component<loom::Precision> load_policy(const std::string& name,
                                                          const std::string& toml = "") {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_PRECISION, name);
  if (entry == nullptr) throw std::runtime_error("precision/" + name + " not found");
  return registry.create<loom::Precision>(*entry, {"precision", toml, "", "test.toml:1:1"}, false);
}

}  // namespace loom_precision_test
