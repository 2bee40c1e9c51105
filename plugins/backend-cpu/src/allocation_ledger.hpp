// AllocationLedger: the live allocations of backend/cpu and their high-water marks, for its
// MemoryUsage and the peak in its DeviceInfo. Allocations are rare (a run makes a handful, none
// once warm), so a mutex and a map per allocation cost nothing that matters.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <unordered_map>

#include "loom/sdk/ops/memory_usage.hpp"

namespace loom_cpu {

class AllocationLedger {
 public:
  /// `data` was handed out for a request of `requested` bytes, `allocated` set aside for it.
  void add(void* data, size_t requested, size_t allocated) {
    const std::lock_guard<std::mutex> lock(mutex_);
    live_[data] = {requested, allocated};
    usage_.requested += requested;
    usage_.allocated += allocated;
    usage_.peak_requested = std::max(usage_.peak_requested, usage_.requested);
    usage_.peak_allocated = std::max(usage_.peak_allocated, usage_.allocated);
  }
  /// `data` is given back (ignored when the ledger does not hold it).
  void remove(void* data) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = live_.find(data);
    if (found == live_.end()) return;
    usage_.requested -= found->second.requested;
    usage_.allocated -= found->second.allocated;
    live_.erase(found);
  }
  /// Nothing is cached: what is reserved is what is allocated.
  loom::MemoryUsageBytes usage() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    loom::MemoryUsageBytes u = usage_;
    u.reserved = u.allocated;
    return u;
  }

 private:
  struct Sizes {
    size_t requested, allocated;
  };
  mutable std::mutex mutex_;
  std::unordered_map<void*, Sizes> live_;
  loom::MemoryUsageBytes usage_{};
};

}  // namespace loom_cpu
