// TransferCounter: how often a backend made the host wait for it — copies to the host and explicit
// synchronisations — and how often the host copied to it (a named interface, interfaces.hpp).
// On a GPU every copy to the host waits for all queued work: the count of those per training step
// is what keeps a step from overlapping with the next (docs/gpu.md). `loom run` reports the
// steady-state figure per step in its metrics records (`syncs_per_step`).
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Counts since the backend was created.
struct TransferCounts {
  uint64_t device_to_host_copies;  ///< copy_to_host calls, the backend's own internal reads included
  uint64_t synchronizations;       ///< synchronize calls
  uint64_t host_to_device_copies;  ///< copy_from_host calls
};

class TransferCounter {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.transfer_counts";
  static constexpr uint32_t kInterfaceVersion = 1;

  virtual TransferCounts transfer_counts() const = 0;

 protected:
  ~TransferCounter() = default;
};

/// The times the host waited for the device: copies to the host plus synchronisations.
inline uint64_t host_waits(const TransferCounts& counts) {
  return counts.device_to_host_copies + counts.synchronizations;
}

LOOM_SDK_NAMESPACE_END
