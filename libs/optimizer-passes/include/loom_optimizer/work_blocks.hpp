// Work blocks: the flat buffers cut into fixed pieces that every optimizer pass and reduction
// follows.
//
// A block is a contiguous piece of one segment of at most kBlockElements elements; blocks never
// straddle segments and their boundaries depend only on the segment table (never on a thread
// count). Every reduction sums within a block (LaneSums), then combines block results in block
// order, which is what makes results bit-identical whatever the number of threads — and between
// the host optimizers and backend/cpu's OptimizerSteps, which cut the same blocks.
//
// A pass runs a per-block function through a `for_each_block(num_blocks, fn)` the caller supplies
// (plugins/optimizers: its BlockRunner threads; backend/cpu: OpenMP): each block is processed by one
// thread and writes only its own elements and partial sums, so the schedule cannot change results.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "loom/sdk/ops/optimizer_steps.hpp"

namespace loom_optimizer {

/// Elements per work block (a multiple of the 8-lane kernels' width; 128 KiB of floats).
inline constexpr size_t kBlockElements = 32768;

/// One contiguous piece of one segment.
struct WorkBlock {
  uint32_t segment;  ///< index into the segment table
  size_t begin;      ///< first element (flat index)
  size_t end;        ///< one past the last element
};

/// The blocks of `segments`, segment by segment in table order, each from its first element on.
inline std::vector<WorkBlock> cut_into_blocks(const std::vector<loom::OptimizerSegment>& segments) {
  std::vector<WorkBlock> blocks;
  for (size_t i = 0; i < segments.size(); ++i) {
    const size_t offset = segments[i].offset, end = offset + segments[i].count;
    for (size_t begin = offset; begin < end; begin += kBlockElements)
      blocks.push_back({static_cast<uint32_t>(i), begin, std::min(begin + kBlockElements, end)});
  }
  return blocks;
}

/// What a pass calls, on the block's thread, once the weights of a block are final for the step:
/// `weights_final(begin, end)` over its flat elements [begin, end). The host optimizers pass
/// nothing; backend/cpu writes those elements' 16-bit working copy while they are still in cache
/// (docs/decisions/optimizer-working-copy.md).
struct NoWeightsFinalHook {
  void operator()(size_t, size_t) const {}
};

/// Σ of per-block partial sums in block order (the global sum of a reduction).
inline double total_in_block_order(const std::vector<double>& block_sums) {
  double total = 0.0;
  for (double partial : block_sums) total += partial;
  return total;
}

/// Per-segment sums of per-block partial sums, each in block order.
inline void segment_totals(const std::vector<WorkBlock>& blocks, const std::vector<double>& block_sums,
                           std::vector<double>& totals) {
  std::fill(totals.begin(), totals.end(), 0.0);
  for (size_t b = 0; b < blocks.size(); ++b) totals[blocks[b].segment] += block_sums[b];
}

}  // namespace loom_optimizer
