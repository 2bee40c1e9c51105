// See merge_table.hpp.
#include "merge_table.hpp"

namespace loom::bpe {

void MergeTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  const size_t capacity = old.empty() ? 1024 : old.size() * 2;
  slots_.assign(capacity, Slot{kEmpty, Merge{0, 0}});
  mask_ = capacity - 1;
  count_ = 0;
  for (const Slot& slot : old)
    if (slot.key != kEmpty)
      set(static_cast<int32_t>(slot.key >> 32), static_cast<int32_t>(slot.key & 0xFFFFFFFFu), slot.merge);
}

void MergeTable::set(int32_t left, int32_t right, Merge merge) {
  if ((count_ + 1) * 2 > slots_.size()) grow();  // load factor at most 1/2
  const uint64_t key = pack(left, right);
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      slot.merge = merge;
      return;
    }
    if (slot.key == kEmpty) {
      slot = Slot{key, merge};
      ++count_;
      return;
    }
  }
}

}  // namespace loom::bpe
