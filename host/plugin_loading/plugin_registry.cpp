// Plugin discovery, de-duplication and component creation; see plugin_registry.hpp.
#include "plugin_loading/plugin_registry.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/error.hpp"
#include "plugin_loading/openmp_wait_policy.hpp"
#include "recipe/errors.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

void log_from_plugin(void* /*context*/, int32_t level, const char* component, const char* message) noexcept {
  try {
    spdlog::log(static_cast<spdlog::level::level_enum>(std::clamp(level, 0, 4)), "[{}] {}",
                component != nullptr ? component : "?", message != nullptr ? message : "");
  } catch (...) {
  }
}

const loom_host_services kHostServices{sizeof(loom_host_services), nullptr, &log_from_plugin};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::string ComponentEntry::full_name() const {
  return std::string(loom::kind_name(kind)) + "/" + name;
}

loom_query_interface_fn ComponentEntry::interfaces() const {
  const size_t end = offsetof(loom_component_desc, query_interface) + sizeof(loom_query_interface_fn);
  return descriptor->struct_size >= end ? descriptor->query_interface : nullptr;
}

std::string ComponentConflict::message() const {
  return fmt::format(
      "component {} is provided by two plugins: {} and {}; remove one of them from the plugin "
      "search path",
      component, first_path, second_path);
}

PluginRegistry::PluginRegistry(const PluginSearchOptions& options) {
  apply_openmp_wait_default();  // before a plugin maps libgomp, which reads it once
  searched_ = plugin_search_directories(options);
  std::set<std::pair<dev_t, ino_t>> seen_files;
  for (const PluginCandidate& candidate : discover_plugin_files(options)) {
    std::error_code error;
    const fs::path canonical = fs::canonical(candidate.path, error);
    // A [plugins] path that fails says which recipe key to fix.
    const std::string named_by = candidate.named_by.empty() ? "" : "; named by " + candidate.named_by;
    if (error) {
      if (candidate.explicit_file)
        throw PluginLoadError(candidate.path, "no such plugin file (" + error.message() + ")" + named_by);
      continue;
    }
    struct stat info {};
    if (::stat(canonical.c_str(), &info) != 0) continue;
    if (!seen_files.insert({info.st_dev, info.st_ino}).second) continue;  // symlink or repeat
    try {
      add(load_plugin_library(canonical.string()));
    } catch (const PluginLoadError& e) {
      if (candidate.explicit_file) throw PluginLoadError(e.path(), e.reason() + named_by);
      spdlog::warn("refused plugin {}", e.what());
      refused_.push_back({e.path(), e.reason()});
    }
  }
}

void PluginRegistry::add(std::shared_ptr<PluginLibrary> plugin) {
  for (const auto& loaded : plugins_) {
    if (loaded->name() == plugin->name()) {
      spdlog::debug("plugin '{}' at {} is shadowed by {}", plugin->name(), plugin->path, loaded->path);
      refused_.push_back({plugin->path, fmt::format("plugin '{}' is shadowed by {} (found earlier in "
                                                    "the search order)",
                                                    plugin->name(), loaded->path)});
      return;
    }
  }
  const loom_plugin_desc* d = plugin->descriptor;
  for (uint32_t i = 0; i < d->num_components; ++i) {
    ComponentEntry entry{d->components[i].kind, d->components[i].name, &d->components[i], plugin};
    for (const auto& existing : components_)
      if (existing.kind == entry.kind && existing.name == entry.name)
        conflicts_.push_back({entry.full_name(), existing.plugin->path, plugin->path});
    components_.push_back(std::move(entry));
  }
  plugins_.push_back(std::move(plugin));
}

const ComponentEntry* PluginRegistry::find(uint32_t kind, const std::string& name) const {
  const std::string full = std::string(loom::kind_name(kind)) + "/" + name;
  for (const auto& conflict : conflicts_)
    if (conflict.component == full) throw PluginLoadError(conflict.second_path, conflict.message());
  for (const auto& entry : components_)
    if (entry.kind == kind && entry.name == name) return &entry;
  return nullptr;
}

std::vector<std::string> PluginRegistry::names_of_kind(uint32_t kind) const {
  std::vector<std::string> names;
  for (const auto& entry : components_)
    if (entry.kind == kind) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::shared_ptr<void> PluginRegistry::create_object(const ComponentEntry& entry,
                                                    const ComponentConfig& config, bool dry_run) const {
  loom_create_args args{};
  args.struct_size = sizeof(args);
  args.config_toml = config.toml.data();
  args.config_length = config.toml.size();
  args.config_origins = config.origins.data();
  args.config_origins_length = config.origins.size();
  args.table_origin = config.table_origin.c_str();
  args.dry_run = dry_run ? 1 : 0;
  args.host = &kHostServices;
  args.table_name = config.table_name.c_str();

  char message[8192] = {0};
  loom_error_buffer error{message, sizeof(message)};
  void* object = nullptr;
  loom_status status = LOOM_E_INTERNAL;
  try {
    status = entry.descriptor->create(&args, &object, &error);
  } catch (...) {
    // create is noexcept by contract; a non-conforming plugin must not take the host down.
    status = LOOM_E_INTERNAL;
    loom::write_error(&error, "create threw an exception across the C boundary");
  }
  if (status == LOOM_E_INVALID_CONFIG) throw RecipeError(split_lines(message));
  // A file the options name is missing or malformed (an empty vocabulary): the user's input, exit 2.
  if (status == LOOM_E_IO)
    throw InputError(fmt::format("plugin '{}', component {}: {}", entry.plugin->name(), entry.full_name(),
                                 message[0] ? message : "no message"));
  if (status != LOOM_OK || object == nullptr)
    throw PluginError(fmt::format("plugin '{}', component {}: create failed ({}): {}", entry.plugin->name(),
                                  entry.full_name(), loom::status_name(status),
                                  message[0] ? message : "no message"));
  // Host-side deleter: destroys through the plugin, then releases the library reference.
  std::shared_ptr<PluginLibrary> library = entry.plugin;
  loom_destroy_fn destroy = entry.descriptor->destroy;
  std::shared_ptr<void> created(object, [library, destroy](void* p) { destroy(p); });
  return created;
}

}  // namespace loom::host
