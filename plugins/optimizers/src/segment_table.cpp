// SegmentTable: validation and decay resolution. See segment_table.hpp.
#include "segment_table.hpp"

#include <algorithm>
#include <numeric>

#include "loom/sdk/error.hpp"

namespace loom_optim {
namespace {

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return name.find(p) != std::string::npos; });
}

}  // namespace

SegmentTable::SegmentTable(const loom::ParameterSegment* segments, size_t count, size_t total_elements,
                           const std::vector<std::string>& no_decay)
    : total_elements_(total_elements) {
  if (count > 0 && segments == nullptr) throw loom::Error("optimizer setup: segment table is null");
  if (count > UINT32_MAX) throw loom::Error("optimizer setup: more than 2^32 segments");
  segments_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const loom::ParameterSegment& s = segments[i];
    const std::string name = s.name != nullptr ? s.name : "";
    const std::string label = "segment " + std::to_string(i) + " '" + name + "'";
    if (name.empty()) throw loom::Error("optimizer setup: segment " + std::to_string(i) + " has no name");
    if (s.offset > total_elements || s.count > total_elements - s.offset)
      throw loom::Error("optimizer setup: " + label + " [" + std::to_string(s.offset) + ", " +
                        std::to_string(s.offset + s.count) + ") lies outside the flat buffers of " +
                        std::to_string(total_elements) + " elements");
    bool decays = false;
    switch (s.decay) {
      case loom::DecayRule::by_name:
        decays = !matches_any(name, no_decay);
        break;
      case loom::DecayRule::no_decay:
        decays = false;
        break;
      case loom::DecayRule::decay:
        decays = true;
        break;
      default:
        throw loom::Error("optimizer setup: " + label + " has an unknown decay rule " +
                          std::to_string(static_cast<int>(s.decay)));
    }
    segments_.push_back({name, s.offset, s.count, decays});
  }

  // Overlap check on the segments sorted by offset (empty segments overlap nothing).
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return segments_[a].offset < segments_[b].offset; });
  size_t previous = SIZE_MAX;
  for (size_t index : order) {
    const ResolvedSegment& s = segments_[index];
    if (s.count == 0) continue;
    if (previous != SIZE_MAX && segments_[previous].offset + segments_[previous].count > s.offset)
      throw loom::Error("optimizer setup: segments '" + segments_[previous].name + "' and '" + s.name +
                        "' overlap in the flat buffers");
    previous = index;
  }
}

}  // namespace loom_optim
