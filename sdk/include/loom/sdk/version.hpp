// Versions of the Loom SDK: the plugin ABI (checked by the host when loading) and the SDK's
// semantic version (informational). Breaking changes are listed in docs/plugins.md ("SDK changes").
#pragma once

#include "loom/sdk/plugin_abi.h"

// Every C++ name of the SDK lives in this inline namespace, so a plugin built against another
// ABI major fails to link against anything expecting this one instead of misbehaving.
#define LOOM_SDK_NAMESPACE_BEGIN \
  namespace loom {               \
  inline namespace sdk_abi0 {
#define LOOM_SDK_NAMESPACE_END \
  }                            \
  }

LOOM_SDK_NAMESPACE_BEGIN

/// The SDK's semantic version, reported by `loom --version` and in plugin descriptors.
inline constexpr const char* kSdkVersion = "0.5.0";
/// Plugin ABI version the headers describe (copied into every plugin descriptor).
inline constexpr unsigned kAbiMajor = LOOM_PLUGIN_ABI_MAJOR;
inline constexpr unsigned kAbiMinor = LOOM_PLUGIN_ABI_MINOR;

LOOM_SDK_NAMESPACE_END
