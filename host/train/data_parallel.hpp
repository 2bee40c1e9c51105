// The collectives a data-parallel run needs besides gradient averaging (gradient_sync.hpp):
// one set of starting weights, agreement on stopping, and statistics summed or gathered over
// ranks for rank 0's metrics. Every function is a collective: all ranks call it in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/sdk/communicator.hpp"
#include "plugin_loading/component.hpp"

namespace loom::host {

struct RankGroup {
  /// All-gathers go through its ExtendedCollectives where it offers them.
  const Component<loom::Communicator>& communicator;
  int rank;
  int world;
};

/// FNV-1a over the bytes of `count` floats: equal buffers give equal checksums.
uint64_t parameter_checksum(const float* values, size_t count);

/// Copies rank 0's `count` floats to every rank, then checks every rank holds the same bytes;
/// throws std::runtime_error naming the ranks that differ.
void broadcast_parameters(const RankGroup& group, float* values, size_t count);

/// Element-wise sum over ranks (carried as f32: ample for losses and counts of a log window).
void sum_over_ranks(const RankGroup& group, std::vector<double>& values);

/// True on every rank when any rank passes true.
bool any_rank(const RankGroup& group, bool flag);

/// [{"rank": r, "step_ms": .., "sequences_per_second": ..}, ...] for every rank (gathered where the
/// communicator offers ExtendedCollectives; only this rank's entry otherwise).
nlohmann::json per_rank_throughput(const RankGroup& group, double step_ms, double sequences_per_second);

}  // namespace loom::host
