// One loaded plugin file: the mapped library and its validated descriptor.
//
// `load_plugin_library` checks the file's ELF structure (plugin_file_check.hpp: a truncated file
// would otherwise die in dlopen with SIGBUS), maps it with RTLD_NOW | RTLD_LOCAL (an unresolved
// symbol fails here, not at first call), then checks magic, struct size, ABI and toolchain before
// reading any other field. Any failure is a PluginLoadError naming the file, both versions where
// relevant, and what to do. The library stays mapped while a `shared_ptr<PluginLibrary>` exists;
// every component object holds one.
#pragma once

#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/shared_library.hpp>

#include <memory>
#include <string>

#include "loom/sdk/plugin_abi.h"

namespace loom::host {

struct PluginLibrary {
  std::string path;  // canonical absolute path
  boost::dll::shared_library library;
  const loom_plugin_desc* descriptor = nullptr;

  std::string name() const { return descriptor->name; }
  std::string version() const { return descriptor->version; }
};

/// Loads and validates one plugin file; throws PluginLoadError.
std::shared_ptr<PluginLibrary> load_plugin_library(const std::string& canonical_path);

/// Checks a descriptor against this host; returns "" when acceptable, else the reason.
std::string descriptor_problem(const loom_plugin_desc* descriptor);

}  // namespace loom::host
