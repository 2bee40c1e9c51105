// DeviceDescription: what a backend says about its device — name, size, dense bf16 peak and
// memory high-water mark — for `loom bench` and logs (a named interface, interfaces.hpp).
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// The device as `loom bench` reports it (DeviceDescription::device_info).
struct DeviceInfo {
  char name[128];                  ///< NUL-terminated: "NVIDIA H100 80GB HBM3", "CPU"
  int32_t multiprocessors;         ///< streaming multiprocessors (GPU) or threads (CPU)
  double peak_dense_bf16_flops;    ///< the device's dense bf16 peak in FLOP/s; 0 when unknown
  uint64_t peak_allocated_bytes;   ///< high-water mark of allocate() so far; 0 when not tracked
};

class DeviceDescription {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.device_description";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Name, size, peak and memory high-water mark of the device.
  virtual DeviceInfo device_info() const = 0;

 protected:
  ~DeviceDescription() = default;
};

LOOM_SDK_NAMESPACE_END
