// Communicator: the processes of one run and the collectives the trainer needs.
//
// One process per device. Rank 0 writes checkpoints and metrics. Implementations: `local` (one
// process, in plugins/comm-local: host memory only, this interface alone); `mpi` and `nccl` also offer
// the named interface ExtendedCollectives (extended_collectives.hpp: non-blocking, typed and
// device-buffer collectives, all-gather), which the host asks for and uses where it is offered.
#pragma once

#include <cstddef>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class Communicator {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_COMMUNICATOR;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "communicator";

  virtual ~Communicator() = default;

  /// This process's rank, 0 ≤ rank < size.
  virtual int rank() const = 0;
  /// Number of processes in the run.
  virtual int size() const = 0;
  /// In place: every rank ends with the element-wise sum over ranks.
  virtual void all_reduce_sum(float* data, size_t count) = 0;
  /// In place: every rank ends with the element-wise mean over ranks.
  virtual void all_reduce_mean(float* data, size_t count) = 0;
  /// Copies `bytes` from `root`'s buffer into every other rank's.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  /// Returns when every rank has called it.
  virtual void barrier() = 0;
};

LOOM_SDK_NAMESPACE_END
