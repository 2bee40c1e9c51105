// ExtendedCollectives: what data-parallel training across processes needs beyond the
// communicator's own interface (communicator.hpp), as a named interface (interfaces.hpp) that a
// communicator offers and the host asks for — `communicator.find<loom::ExtendedCollectives>()` —
// like every other extension of a component.
//
// Adds: the rank on this node, all-gather, typed all-reduce (f32, bf16) on host memory,
// non-blocking host all-reduce the trainer overlaps with backward, and stream-ordered
// collectives on device buffers (`communicator/nccl`). A communicator that does not offer it
// (`communicator/local`, a plugin built before it existed) is driven through `Communicator` alone:
// gradients are averaged by one blocking all-reduce after backward, and rank statistics are not
// gathered.
//
// Contract:
// - Collectives are matched by call order: every rank issues the same collectives (including
//   the non-blocking ones, and those of `Communicator`) in the same order with the same counts.
// - A peer that dies or stops answering turns into a loom::Error naming that rank within the
//   implementation's timeout (`[communicator] timeout_s`); after such an error the communicator
//   is broken and every later call throws. Nothing hangs forever.
// - Non-blocking: `start_all_reduce` returns a handle; the buffer must stay untouched until
//   `wait(handle)` returned (or `test(handle)` returned true). `test` also drives progress of
//   every started collective, so calling it between pieces of other work overlaps the two.
// - Device methods take a backend's device pointers and its stream (`cudaStream_t` as void*);
//   they enqueue the collective on that stream and return without waiting. A communicator
//   without device support returns false from `device_buffers()` and throws from them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// How an all-reduce combines the ranks' values.
enum class ReduceOp : int32_t { sum = 0, mean = 1 };

/// A started non-blocking collective; 0 is never a valid handle.
using CollectiveHandle = uint64_t;

class ExtendedCollectives {
 public:
  static constexpr const char* kInterfaceName = "loom.communicator.extended_collectives";
  static constexpr uint32_t kInterfaceVersion = 1;

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

 protected:
  ~ExtendedCollectives() = default;
};

LOOM_SDK_NAMESPACE_END
