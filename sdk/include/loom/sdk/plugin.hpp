// Defining a plugin: the one macro a plugin uses, and the context every component is built with.
//
//   class LocalCommunicator final : public loom::Communicator {
//    public:
//     explicit LocalCommunicator(loom::ComponentContext& context);  // reads all its options here
//     ...
//   };
//   LOOM_PLUGIN("comm-local", "0.1.0", "Single-process communicator",
//               loom::component<loom::Communicator, LocalCommunicator>("local", "0.1.0", "rank 0 of 1"))
//
// A component that offers named interfaces beyond its kind's (interfaces.hpp) lists them last:
//   loom::component<loom::Backend, CpuBackend>("cpu", "0.3.0", "...", loom::offers<loom::FusedAttention>{})
//
// The macro defines the exported `loom_plugin_query` and a static descriptor. Factories run the
// constructor inside `boundary_call`, then `Options::finish()`, so unknown keys and every option
// problem reach the host as one LOOM_E_INVALID_CONFIG message. Plugins need no Boost.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "loom/sdk/error.hpp"
#include "loom/sdk/interfaces.hpp"
#include "loom/sdk/options.hpp"
#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

#define LOOM_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

#if defined(_LIBCPP_VERSION)
#define LOOM_TOOLCHAIN_STDLIB "libc++"
#define LOOM_TOOLCHAIN_CXX11_ABI (-1)
#else
#define LOOM_TOOLCHAIN_STDLIB "libstdc++"
#define LOOM_TOOLCHAIN_CXX11_ABI (_GLIBCXX_USE_CXX11_ABI)
#endif

#if defined(__clang__)
#define LOOM_TOOLCHAIN_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define LOOM_TOOLCHAIN_COMPILER "GCC " __VERSION__
#else
#define LOOM_TOOLCHAIN_COMPILER "unknown"
#endif

LOOM_SDK_NAMESPACE_BEGIN

/// The toolchain fingerprint of the code including this header (host and plugins alike).
inline constexpr loom_toolchain this_toolchain() {
  return loom_toolchain{sizeof(loom_toolchain), LOOM_TOOLCHAIN_STDLIB, LOOM_TOOLCHAIN_CXX11_ABI,
                        static_cast<int64_t>(__cplusplus), LOOM_TOOLCHAIN_COMPILER};
}

/// Log levels for `ComponentContext::log`.
enum class LogLevel : int32_t { trace = 0, debug = 1, info = 2, warn = 3, error = 4 };

/// The host's logger as a component keeps it past its constructor (ComponentContext::logger):
/// a dataset reports in `open()` what it read and dropped. A no-op when the host gave none.
class Logger {
 public:
  Logger() = default;
  Logger(const loom_host_services* host, std::string component)
      : host_(host), component_(std::move(component)) {}
  void log(LogLevel level, const std::string& message) const {
    if (host_ != nullptr && host_->log != nullptr)
      host_->log(host_->context, static_cast<int32_t>(level), component_.c_str(), message.c_str());
  }

 private:
  const loom_host_services* host_ = nullptr;  // the host's services outlive every component
  std::string component_;
};

/// Handed to a component's constructor: its options, whether this is a dry run, host services.
class ComponentContext {
 public:
  ComponentContext(Options& options, bool dry_run, const loom_host_services* host, const char* component_name)
      : options_(options), dry_run_(dry_run), host_(host), name_(component_name) {}

  /// The component's recipe table. Read every option in the constructor.
  Options& options() const { return options_; }
  /// True under `loom check`: validate options, acquire nothing (no files, devices, threads).
  bool dry_run() const { return dry_run_; }
  /// Logs through the host's logger (a no-op when the host gave none).
  void log(LogLevel level, const std::string& message) const {
    if (host_ != nullptr && host_->log != nullptr)
      host_->log(host_->context, static_cast<int32_t>(level), name_, message.c_str());
  }
  /// The same logger, valid for the component's whole life (this context is not).
  Logger logger() const { return Logger(host_, name_ != nullptr ? name_ : ""); }

 private:
  Options& options_;
  bool dry_run_;
  const loom_host_services* host_;
  const char* name_;
};

namespace detail {

template <typename Interface, typename Impl>
loom_status create_component(const loom_create_args* args, void** out, loom_error_buffer* error) noexcept {
  return boundary_call(error, [&] {
    if (args == nullptr || out == nullptr) throw Error("create called without arguments");
    const char* table = args->table_name != nullptr ? args->table_name : Interface::kRecipeTable;
    Options options(std::string_view(args->config_toml, args->config_length),
                    std::string_view(args->config_origins, args->config_origins_length),
                    args->table_origin != nullptr ? args->table_origin : "<recipe>", table);
    ComponentContext context(options, args->dry_run != 0, args->host, table);
    std::unique_ptr<Impl> component;
    if (options.problems().empty()) component = std::make_unique<Impl>(context);
    options.finish();
    *out = static_cast<Interface*>(component.release());
  });
}

template <typename Interface>
void destroy_component(void* component) noexcept {
  delete static_cast<Interface*>(component);
}

}  // namespace detail

/// Describes component `Impl` (implementing `Interface`) for the plugin's component table.
/// `Interface` supplies kKind, kInterfaceVersion and kRecipeTable; `offers<...>` lists the named
/// interfaces `Impl` also implements (none by default).
template <typename Interface, typename Impl, typename... Offered>
constexpr loom_component_desc component(const char* name, const char* version, const char* summary,
                                        offers<Offered...> = {}) {
  return loom_component_desc{
      sizeof(loom_component_desc),
      static_cast<uint32_t>(Interface::kKind),
      name,
      version,
      Interface::kInterfaceVersion,
      summary,
      &detail::create_component<Interface, Impl>,
      &detail::destroy_component<Interface>,
      sizeof...(Offered) == 0 ? nullptr : &detail::query_interface<Interface, Impl, Offered...>};
}

LOOM_SDK_NAMESPACE_END

/// Defines the plugin's exported entry point and descriptor. Use once per plugin.
#define LOOM_PLUGIN(plugin_name, plugin_version, plugin_description, ...)       \
  LOOM_PLUGIN_EXPORT const loom_plugin_desc* loom_plugin_query(void) noexcept { \
    static const loom_component_desc components[] = {__VA_ARGS__};              \
    static const loom_plugin_desc descriptor = {                                \
        LOOM_PLUGIN_MAGIC,                                                      \
        sizeof(loom_plugin_desc),                                               \
        LOOM_PLUGIN_ABI_MAJOR,                                                  \
        LOOM_PLUGIN_ABI_MINOR,                                                  \
        ::loom::kSdkVersion,                                                    \
        ::loom::this_toolchain(),                                               \
        plugin_name,                                                            \
        plugin_version,                                                         \
        plugin_description,                                                     \
        static_cast<uint32_t>(sizeof(components) / sizeof(components[0])),      \
        components,                                                             \
        {nullptr, nullptr, nullptr, nullptr}};                                  \
    return &descriptor;                                                         \
  }
