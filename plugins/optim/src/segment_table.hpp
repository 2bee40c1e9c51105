// SegmentTable: the optimizer's own copy of the parameter segment table, validated, with each
// segment's weight-decay membership resolved and the flat buffers cut into fixed work blocks.
//
// Blocks never straddle segments and their boundaries depend only on the table (never on the
// thread count): every reduction sums within a block, then combines block results in block order,
// which is what makes results bit-identical whatever the number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/optimizer.hpp"

namespace loom_optim {

/// Elements per work block (a multiple of the 8-lane kernels' width; 128 KiB of floats).
inline constexpr size_t kBlockElements = 32768;

/// One contiguous piece of one segment.
struct WorkBlock {
  uint32_t segment;  ///< index into the table
  size_t begin;      ///< first element (flat index)
  size_t end;        ///< one past the last element
};

struct ResolvedSegment {
  std::string name;
  size_t offset;
  size_t count;
  bool decays;
};

class SegmentTable {
 public:
  SegmentTable() = default;
  /// Copies and validates `segments` (throws loom::Error naming the offending segment).
  /// `no_decay`: name substrings that put a `DecayRule::by_name` segment in the no-decay set.
  SegmentTable(const loom::ParameterSegment* segments, size_t count, size_t total_elements,
               const std::vector<std::string>& no_decay);

  size_t size() const { return segments_.size(); }
  const ResolvedSegment& operator[](size_t index) const { return segments_[index]; }
  size_t total_elements() const { return total_elements_; }
  const std::vector<WorkBlock>& blocks() const { return blocks_; }

 private:
  std::vector<ResolvedSegment> segments_;
  std::vector<WorkBlock> blocks_;
  size_t total_elements_ = 0;
};

}  // namespace loom_optim
