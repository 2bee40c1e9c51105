// Plugin discovery order; see plugin_search_path.hpp.
#include "plugin_loading/plugin_search_path.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

namespace fs = std::filesystem;

namespace loom::host {
namespace {

const char* environment_variable(const char* name) {
  return secure_getenv(name);
}

std::vector<std::string> split_colon_list(const char* text) {
  std::vector<std::string> out;
  if (text == nullptr) return out;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ':' || *p == '\0') {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

std::string executable_directory() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

bool defaults_enabled(const PluginSearchOptions& options) {
  if (!options.default_paths) return false;
  if (options.environment) {
    const char* only = environment_variable("LOOM_PLUGIN_PATH_ONLY");
    if (only != nullptr && std::strcmp(only, "1") == 0) return false;
  }
  return true;
}

void add_directory(const std::string& directory, std::vector<PluginCandidate>& out) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) return;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (is_plugin_file_name(name)) names.push_back(entry.path().string());
  }
  std::sort(names.begin(), names.end());
  for (auto& name : names) out.push_back({name, false, ""});
}

}  // namespace

bool is_plugin_file_name(const std::string& file_name) {
  static const std::regex pattern(R"(libloom-[A-Za-z0-9_.+-]+\.so)");
  return std::regex_match(file_name, pattern);
}

std::vector<std::string> plugin_search_directories(const PluginSearchOptions& options) {
  std::vector<std::string> dirs(options.directories);
  for (const auto& named : options.recipe_paths) {
    std::error_code error;
    if (fs::is_directory(named.path, error)) dirs.push_back(named.path);
  }
  if (options.environment)
    for (auto& dir : split_colon_list(environment_variable("LOOM_PLUGIN_PATH"))) dirs.push_back(dir);
  if (defaults_enabled(options)) {
    if (const char* xdg = environment_variable("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0')
      dirs.push_back(std::string(xdg) + "/loom/plugins");
    else if (const char* home = environment_variable("HOME"); home != nullptr && *home != '\0')
      dirs.push_back(std::string(home) + "/.local/share/loom/plugins");
    if (const std::string exe_dir = executable_directory(); !exe_dir.empty())
      dirs.push_back((fs::path(exe_dir) / ".." / "lib" / "loom" / "plugins").lexically_normal().string());
  }
  return dirs;
}

std::vector<PluginCandidate> discover_plugin_files(const PluginSearchOptions& options) {
  std::vector<PluginCandidate> out;
  for (const auto& file : options.files) out.push_back({file, true, ""});
  for (const auto& named : options.recipe_paths) {
    std::error_code error;
    if (!fs::is_directory(named.path, error)) out.push_back({named.path, true, named.named_by});
  }
  for (const auto& dir : plugin_search_directories(options)) add_directory(dir, out);
  return out;
}

}  // namespace loom::host
