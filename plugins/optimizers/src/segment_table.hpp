// SegmentTable: the optimizer's own copy of the parameter segment table, validated (names,
// ranges, overlaps), with each segment's weight-decay membership resolved. The work blocks every
// pass follows are cut from it by loom_optimizer::cut_into_blocks (libs/optimizer-passes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/optimizer.hpp"

namespace loom_optim {

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

 private:
  std::vector<ResolvedSegment> segments_;
  size_t total_elements_ = 0;
};

}  // namespace loom_optim
