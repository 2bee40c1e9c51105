#include "backends.hpp"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "plugin_loading/plugin_registry.hpp"

#ifdef LOOM_BACKEND_CUDA_PLUGIN
#include "gpu_requirement.hpp"  // the skip rule of every GPU test of the tree
#endif

namespace loom_backend_ops {

namespace {

[[maybe_unused]] std::string from_environment(const char* variable, const std::string& fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string backend_cpu_plugin() {
  const char* folder = std::getenv("LOOM_PLUGIN_DIR");
  if (folder != nullptr && *folder != '\0') return std::string(folder) + "/libloom-backend-cpu.so";
  return LOOM_BACKEND_CPU_PLUGIN;
}

/// Component `name` of kind backend from the plugin `file` alone, created with options `toml`.
loom::host::Component<loom::Backend> create(const std::string& file, const std::string& name,
                                            const std::string& toml) {
  loom::host::PluginSearchOptions search;
  search.files = {file};
  search.default_paths = false;
  search.environment = false;
  const loom::host::PluginRegistry registry(search);
  const loom::host::ComponentEntry* entry = registry.find(LOOM_KIND_BACKEND, name);
  if (entry == nullptr) throw std::runtime_error(file + " provides no backend/" + name);
  // The component holds its library: the registry may go.
  return registry.create<loom::Backend>(*entry, {"backend", toml, "", "backend_ops"}, false);
}

std::unique_ptr<BackendUnderTest> load(const std::string& name) {
  auto loaded = std::make_unique<BackendUnderTest>();
  loaded->name = name;
  if (name == "cpu") {
    loaded->component = create(backend_cpu_plugin(), "cpu", "threads = 2\n");
    loaded->runs_reference_code = true;
  } else if (name == "cpu-opaque") {
    loaded->component = create(LOOM_OPAQUE_BACKEND_PLUGIN, "cpu-opaque", "threads = 2\n");
    loaded->runs_reference_code = true;
#ifdef LOOM_BACKEND_CUDA_PLUGIN
  } else if (name == "cuda") {
    loaded->component = create(from_environment("LOOM_BACKEND_CUDA_PLUGIN", LOOM_BACKEND_CUDA_PLUGIN), "cuda",
                               "device = 0\n");
#endif
  } else {
    throw std::runtime_error("no backend named " + name + " in loom_backend_ops_test");
  }
  return loaded;
}

std::mutex loaded_mutex;

}  // namespace

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {
      "cpu",
      "cpu-opaque",
#ifdef LOOM_BACKEND_CUDA_PLUGIN
      "cuda",
#endif
  };
  return names;
}

std::string test_name_of(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

std::string why_not_available([[maybe_unused]] const std::string& name) {
#ifdef LOOM_BACKEND_CUDA_PLUGIN
  if (name == "cuda") {
    const std::string reason = loom_gpu_test::no_cuda_device_reason();
    return reason.empty() ? "" : "no CUDA device: " + reason;
  }
#endif
  return "";
}

bool device_required() {
#ifdef LOOM_BACKEND_CUDA_PLUGIN
  return loom_gpu_test::gpu_required();
#else
  return false;
#endif
}

BackendUnderTest& backend_under_test(const std::string& name) {
  // Created once for every case of the process, as a run creates its backend once, and never
  // destroyed: a GPU backend torn down by a static destructor would run after the CUDA runtime's
  // own exit handlers. The pointer stays reachable, so LeakSanitizer reports nothing.
  static auto* const loaded = new std::map<std::string, std::unique_ptr<BackendUnderTest>>();
  const std::lock_guard<std::mutex> lock(loaded_mutex);
  std::unique_ptr<BackendUnderTest>& slot = (*loaded)[name];
  if (!slot) slot = load(name);
  return *slot;
}

const BackendUnderTest& reference_backend() {
  static const BackendUnderTest* const reference = [] {  // never destroyed, as above
    auto* made = new BackendUnderTest();
    made->name = "cpu (reference, one thread)";
    made->component = create(backend_cpu_plugin(), "cpu", "threads = 1\n");
    made->runs_reference_code = true;
    return made;
  }();
  return *reference;
}

}  // namespace loom_backend_ops
