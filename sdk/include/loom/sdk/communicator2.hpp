// Communicator2: interface version 2 of the communicator kind, frozen (its vtable is plugin ABI).
// The methods it adds to `Communicator` are now the named interface ExtendedCollectives
// (extended_collectives.hpp), which the host asks every communicator for; it no longer calls
// through this class.
//
// Why it stays: hosts built before ExtendedCollectives cast a component declaring interface
// version 2 to this class to reach those methods, so a communicator that derives from both,
// registers as `component<Communicator2, Mine>(..., offers<ExtendedCollectives>{})` and overrides
// each method once (one override serves both bases) keeps its extras on those hosts too
// (communicator/mpi, /nccl). A plugin built against an earlier SDK, declaring version 2 without
// offering ExtendedCollectives, keeps loading and runs through `Communicator` alone. New
// communicators need only `Communicator` and ExtendedCollectives. The contract of every method is
// ExtendedCollectives'.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/communicator.hpp"
#include "loom/sdk/extended_collectives.hpp"
#include "loom/sdk/tensor.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class Communicator2 : public Communicator {
 public:
  static constexpr unsigned kInterfaceVersion = 2;

  /// This process's index among the ranks on its node (selects the device to use).
  virtual int local_rank() const = 0;
  /// In place over host memory; dtype f32 or bf16 (bf16 is summed in f32 and rounded once).
  virtual void all_reduce(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  /// Starts an in-place all-reduce over host memory and returns at once.
  virtual CollectiveHandle start_all_reduce(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  /// Drives progress; true (and the handle is released) when that collective has completed.
  virtual bool test(CollectiveHandle handle) = 0;
  /// Returns when the collective has completed; throws naming the rank on timeout.
  virtual void wait(CollectiveHandle handle) = 0;
  /// Every rank's `bytes` from `send`, concatenated in rank order into `receive` (size × bytes).
  virtual void all_gather(const void* send, size_t bytes, void* receive) = 0;

  /// True when the device methods below work (a GPU communicator).
  virtual bool device_buffers() const = 0;
  /// Stream-ordered in-place all-reduce over device memory (f32, bf16).
  virtual void device_all_reduce(void* data, size_t count, DType dtype, ReduceOp op, void* stream) = 0;
  /// Stream-ordered broadcast of `bytes` device bytes from `root`.
  virtual void device_broadcast(void* data, size_t bytes, int root, void* stream) = 0;
  /// Stream-ordered all-gather of `bytes` per rank into `receive` (size × bytes, device memory).
  virtual void device_all_gather(const void* send, size_t bytes, void* receive, void* stream) = 0;
};

LOOM_SDK_NAMESPACE_END
