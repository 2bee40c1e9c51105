// MemoryUsage: what a backend's allocate() has handed out — the bytes asked for and the bytes set
// aside for them — now and at its high-water mark (a named interface, interfaces.hpp). The host
// compares them with its account of device memory by class (`loom bench`, host/train/
// memory_account.hpp): requested bytes the host did not ask for are the backend's own (workspaces,
// plans), and allocated minus requested is what the allocator's rounding costs.
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Bytes of the allocations live now and the most that were live at once since the backend was
/// created. Every allocate() counts, the backend's own calls included.
struct MemoryUsageBytes {
  uint64_t requested;       ///< sizes passed to allocate(), live now
  uint64_t peak_requested;  ///< the most `requested` has been
  uint64_t allocated;       ///< what the allocator set aside for them (size classes, alignment)
  uint64_t peak_allocated;  ///< the most `allocated` has been (DeviceInfo::peak_allocated_bytes)
  uint64_t reserved;        ///< held from the device, cached free blocks included (= allocated on
                            ///< a backend that caches none)
};

class MemoryUsage {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.memory_usage";
  static constexpr uint32_t kInterfaceVersion = 1;

  virtual MemoryUsageBytes memory_usage() const = 0;

 protected:
  ~MemoryUsage() = default;
};

LOOM_SDK_NAMESPACE_END
