// Loading and validating one plugin file. See plugin_library.hpp for the contract.
#include "plugin_loading/plugin_library.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/communicator2.hpp"
#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/precision.hpp"
#include "loom/sdk/schedule.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "plugin_loading/plugin_file_check.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

constexpr unsigned kSdk02BackendInterfaceVersion = 2;

// Newest interface version of each kind this host can drive.
unsigned supported_interface_version(uint32_t kind) {
  switch (kind) {
    case LOOM_KIND_COMMUNICATOR:
      // Version 2 is Communicator2, which communicator/mpi and /nccl still declare for hosts from
      // before ExtendedCollectives; the host drives every communicator through Communicator and
      // the named interfaces it offers.
      return loom::Communicator2::kInterfaceVersion;
    case LOOM_KIND_BACKEND:
      // Version 2 was SDK 0.2's Backend2 (Backend plus fused attention); such a backend still
      // loads and is driven through its version-1 op set. Op families are named interfaces now.
      return kSdk02BackendInterfaceVersion;
    case LOOM_KIND_DATASET:
      return loom::Dataset::kInterfaceVersion;
    case LOOM_KIND_TOKENIZER:
      return loom::Tokenizer::kInterfaceVersion;
    case LOOM_KIND_OPTIMIZER:
      return loom::Optimizer::kInterfaceVersion;
    case LOOM_KIND_SCHEDULE:
      return loom::Schedule::kInterfaceVersion;
    case LOOM_KIND_PRECISION:
      return loom::Precision::kInterfaceVersion;
    case LOOM_KIND_BLOCK:
      return loom::Block::kInterfaceVersion;
    default:
      return 1;
  }
}

// Oldest interface version of each kind this host still drives (communicator: version 1, the
// host-memory interface that communicator/local implements; backend: version 1, the op set every
// backend implements).
unsigned oldest_interface_version(uint32_t kind) {
  switch (kind) {
    case LOOM_KIND_COMMUNICATOR:
      return loom::Communicator::kInterfaceVersion;
    case LOOM_KIND_BACKEND:
      return loom::Backend::kInterfaceVersion;
    default:
      return supported_interface_version(kind);
  }
}

boost::dll::load_mode::type load_mode() {
  auto mode = boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local;
  // Keeps plugins mapped at exit so sanitizers and valgrind can symbolise their frames.
  const char* no_unload = std::getenv("LOOM_PLUGIN_NO_UNLOAD");
  if (no_unload != nullptr && std::strcmp(no_unload, "1") == 0)
    mode = mode | static_cast<boost::dll::load_mode::type>(RTLD_NODELETE);
  return mode;
}

std::string abi_text(uint32_t major, uint32_t minor) {
  return fmt::format("{}.{}", major, minor);
}

}  // namespace

std::string descriptor_problem(const loom_plugin_desc* d) {
  if (d == nullptr) return "loom_plugin_query returned no descriptor";
  if (d->magic != LOOM_PLUGIN_MAGIC)
    return fmt::format("not a Loom plugin descriptor (magic 0x{:08x}, expected 0x{:08x})", d->magic,
                       LOOM_PLUGIN_MAGIC);
  if (d->struct_size < sizeof(loom_plugin_desc))
    return fmt::format(
        "descriptor is {} bytes, this host needs at least {}: the plugin was built against an "
        "incompatible Loom SDK; rebuild it against SDK {}",
        d->struct_size, sizeof(loom_plugin_desc), loom::kSdkVersion);
  const std::string host_abi = abi_text(LOOM_PLUGIN_ABI_MAJOR, LOOM_PLUGIN_ABI_MINOR);
  const std::string plugin_abi = abi_text(d->abi_major, d->abi_minor);
  if (d->abi_major != LOOM_PLUGIN_ABI_MAJOR)
    return fmt::format(
        "built for Loom plugin ABI {}, this host provides ABI {}; the major versions must match: "
        "rebuild the plugin against Loom SDK {} (ABI {})",
        plugin_abi, host_abi, loom::kSdkVersion, host_abi);
  if (d->abi_minor > LOOM_PLUGIN_ABI_MINOR)
    return fmt::format(
        "built for Loom plugin ABI {}, newer than this host's ABI {}: upgrade Loom, or rebuild the "
        "plugin against Loom SDK {} (ABI {})",
        plugin_abi, host_abi, loom::kSdkVersion, host_abi);
  const loom_toolchain host = loom::this_toolchain();
  const loom_toolchain& tc = d->toolchain;
  const char* stdlib = tc.stdlib != nullptr ? tc.stdlib : "(none)";
  if (tc.struct_size < sizeof(loom_toolchain) || std::strcmp(stdlib, host.stdlib) != 0 ||
      tc.cxx11_abi != host.cxx11_abi || tc.cplusplus < 201703L)
    return fmt::format(
        "built with an incompatible C++ toolchain ({} with cxx11 ABI {}, C++ {}), this host uses {} "
        "with cxx11 ABI {}: rebuild the plugin with the host's standard library",
        stdlib, tc.cxx11_abi, tc.cplusplus, host.stdlib, host.cxx11_abi);
  if (d->name == nullptr || d->version == nullptr || (d->num_components > 0 && d->components == nullptr))
    return "descriptor is missing its name, version or component table";
  for (uint32_t i = 0; i < d->num_components; ++i) {
    const loom_component_desc& c = d->components[i];
    // Every ABI 0.x descriptor has the fields up to `destroy`; later fields are read only when
    // struct_size covers them (ComponentEntry::interfaces()).
    if (c.struct_size < offsetof(loom_component_desc, query_interface) || c.name == nullptr ||
        c.create == nullptr || c.destroy == nullptr)
      return fmt::format("component #{} has an incomplete descriptor", i);
    if (loom::kind_name(c.kind) == nullptr)
      return fmt::format("component '{}' has unknown kind {}; upgrade Loom", c.name, c.kind);
    const unsigned supported = supported_interface_version(c.kind);
    const unsigned oldest = oldest_interface_version(c.kind);
    if (c.interface_version > supported)
      return fmt::format(
          "component {}/{} implements {} interface version {} (plugin built against Loom SDK {}), newer "
          "than this host's version {} (SDK {}): upgrade Loom, or rebuild the plugin against Loom SDK {}",
          loom::kind_name(c.kind), c.name, loom::kind_name(c.kind), c.interface_version,
          d->sdk_version != nullptr ? d->sdk_version : "(unknown)", supported, loom::kSdkVersion,
          loom::kSdkVersion);
    if (c.interface_version < oldest)
      return fmt::format(
          "component {}/{} implements {} interface version {}, this host supports {}: rebuild the plugin "
          "against Loom SDK {}",
          loom::kind_name(c.kind), c.name, loom::kind_name(c.kind), c.interface_version,
          supported == oldest ? fmt::format("version {}", supported)
                              : fmt::format("versions {} to {}", oldest, supported),
          loom::kSdkVersion);
  }
  return "";
}

std::shared_ptr<PluginLibrary> load_plugin_library(const std::string& path) {
  auto plugin = std::make_shared<PluginLibrary>();
  plugin->path = path;
  // Before dlopen: a segment past the end of the file would be mapped and kill the process with
  // SIGBUS on first touch (plugin_file_check.hpp).
  if (std::string problem = plugin_file_problem(path); !problem.empty()) throw PluginLoadError(path, problem);
  // The error_code overload leaves dlerror() set: the loader's own text ("undefined symbol: x",
  // "libfoo.so: cannot open shared object file") is what a user can act on.
  std::error_code error;
  plugin->library.load(boost::dll::fs::path(path), load_mode(), error);
  if (error) {
    const char* reason = dlerror();
    throw PluginLoadError(
        path, std::string("cannot be loaded: ") + (reason != nullptr ? reason : error.message().c_str()));
  }
  if (!plugin->library.has(LOOM_PLUGIN_ENTRY_SYMBOL))
    throw PluginLoadError(path,
                          "loom_plugin_query is not exported: not a Loom plugin, or it was built "
                          "without LOOM_PLUGIN(...)");
  auto query = plugin->library.get<const loom_plugin_desc*()>(LOOM_PLUGIN_ENTRY_SYMBOL);
  plugin->descriptor = query();
  if (std::string problem = descriptor_problem(plugin->descriptor); !problem.empty())
    throw PluginLoadError(path, problem);
  return plugin;
}

}  // namespace loom::host
