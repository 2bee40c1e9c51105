// Named interfaces: how a component offers more than its kind's interface.
//
// A component's kind fixes its main C++ interface (loom::Backend, loom::Optimizer, ...), frozen
// once released. Anything beyond it — a family of backend ops, a device description — is a named
// interface: a small abstract class with a dotted name and a version,
//
//   class FusedAttention {
//    public:
//     static constexpr const char* kInterfaceName = "loom.backend.fused_attention";
//     static constexpr uint32_t kInterfaceVersion = 1;
//     virtual bool fused_attention(int64_t head_dim, int64_t max_seq) const = 0;
//     ...
//    protected:
//     ~FusedAttention() = default;
//   };
//
// that the component's class derives from beside its kind's interface, and names in its plugin's
// component table:
//
//   loom::component<loom::Backend, CpuBackend>("cpu", "0.3.0", "summary",
//                                              loom::offers<loom::FusedAttention, loom::DeviceDescription>{})
//
// Whoever holds the component asks by name and version — the host through its component handle,
// a block through `find_backend_interface<FusedAttention>(setup)` (block.hpp) — and gets the
// component's implementation or nullptr. A component of a plugin built before SDK 0.3 answers
// nullptr to every question (its descriptor has no query_interface), and so does one asked for a
// version it does not implement: callers keep a path for "not offered". A released version never
// changes; a changed interface is a new version, which a component may offer beside the old one.
#pragma once

#include <cstdint>
#include <cstring>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// The named interfaces a component offers (the last argument of `component<>()`, plugin.hpp).
template <typename... Interfaces>
struct offers {};

/// `object`'s implementation of interface `I`, asked through `query` (a component's
/// query_interface; nullptr for a component that predates it): nullptr when not offered.
/// `object` is the pointer the component's factory returned (its kind's interface).
template <typename I>
I* find_interface(loom_query_interface_fn query, void* object) {
  if (query == nullptr || object == nullptr) return nullptr;
  return static_cast<I*>(query(object, I::kInterfaceName, I::kInterfaceVersion));
}

namespace detail {

/// query_interface of component `Impl` (created as `Kind`), offering `Interfaces`.
template <typename Kind, typename Impl, typename... Interfaces>
void* query_interface(void* object, const char* name, uint32_t version) noexcept {
  if (object == nullptr || name == nullptr) return nullptr;
  Impl* impl = static_cast<Impl*>(static_cast<Kind*>(object));
  void* found = nullptr;
  const auto match = [&](void* candidate, const char* candidate_name, uint32_t candidate_version) {
    if (found == nullptr && candidate_version == version && std::strcmp(candidate_name, name) == 0)
      found = candidate;
  };
  (match(static_cast<void*>(static_cast<Interfaces*>(impl)), Interfaces::kInterfaceName,
         Interfaces::kInterfaceVersion),
   ...);
  (void)impl;
  (void)match;
  return found;
}

}  // namespace detail

LOOM_SDK_NAMESPACE_END
