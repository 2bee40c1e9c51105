// Helpers for host tests: hermetic registries over one fixture directory.
#pragma once

#include <string>

#include "plugin_loading/plugin_registry.hpp"

namespace loom::host::testing {

inline std::string fixture_dir(const std::string& fixture) {
  return std::string(LOOM_FIXTURE_DIR) + "/" + fixture;
}

inline std::string fixture_file(const std::string& fixture, const std::string& plugin) {
  return fixture_dir(fixture) + "/libloom-" + plugin + ".so";
}

/// Options that search only `directories` and load only `files`: no environment, no defaults.
inline PluginSearchOptions hermetic(std::vector<std::string> directories,
                                    std::vector<std::string> files = {}) {
  PluginSearchOptions options;
  options.directories = std::move(directories);
  options.files = std::move(files);
  options.default_paths = false;
  options.environment = false;
  return options;
}

inline ComponentConfig config(const std::string& toml, const std::string& origins = "") {
  return ComponentConfig{"communicator", toml, origins, "test.toml:1:1"};
}

}  // namespace loom::host::testing
