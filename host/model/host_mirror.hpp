// HostMirror: host access to a flat f32 buffer of backend memory (the master weights, the
// gradients) whatever the backend (docs/decisions/device-memory-host-paths.md).
//
// Host-side code — the optimizer step (interface version 1 works on host memory), the precision
// policy's non-finite check, gradient all-reduce over MPI, the checkpoint writer and reader —
// needs pointers it may dereference. On a host-addressable backend (device type cpu) the mirror
// IS the buffer: `data()` is the backend pointer and pull/push do nothing, so the CPU path costs
// exactly what it did before mirrors existed. On any other device the mirror is a host vector
// and pull/push are one copy_to_host/copy_from_host of the whole buffer. That vector is allocated
// when first used (data(), pull(), push()), so a mirror that a run never needs — the gradients' on
// the backend path, where no gradient crosses — costs no host memory.
#pragma once

#include <cstddef>
#include <vector>

#include "loom/sdk/backend.hpp"

namespace loom::host {

/// True when the host may dereference `backend`'s memory (a CPU device).
bool host_addressable(const loom::Backend& backend);

class HostMirror {
 public:
  /// Mirrors `flat`, a contiguous f32 view of `backend`'s memory; both must outlive the mirror.
  /// A copying mirror starts uninitialised: pull() first when its contents matter.
  HostMirror(loom::Backend& backend, const loom::Tensor& flat);
  HostMirror(const HostMirror&) = delete;
  HostMirror& operator=(const HostMirror&) = delete;

  /// Host pointer to the elements (the backend buffer itself when host-addressable); allocates
  /// a copying mirror's host copy on first use.
  float* data() { return host(); }
  const float* data() const { return host(); }
  size_t size() const { return size_; }
  /// True when this is a host copy (pull/push move data); false when it is the buffer itself.
  bool copies() const { return copies_; }
  /// Bytes of host memory this mirror holds (0 for the buffer itself, or a copy not yet used).
  size_t host_bytes() const { return copy_.size() * sizeof(float); }

  /// Device → host: the mirror takes the buffer's contents (synchronizes with the backend).
  void pull();
  /// Host → device: the buffer takes the mirror's contents.
  void push();

 private:
  float* host() const;

  loom::Backend& backend_;
  void* device_;
  size_t size_;
  bool copies_;
  mutable std::vector<float> copy_;  // allocated by the first host()
};

}  // namespace loom::host
