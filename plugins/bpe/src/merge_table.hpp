// The merges of a BPE model as a hash table: (left id, right id) → (rank, merged id). Open
// addressing over 64-bit keys: the lookup sits in the innermost loop of every word's merging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::bpe {

struct Merge {
  uint32_t rank;     ///< the merge's line in the merges list: lower merges first
  int32_t merged;    ///< id of the token the pair becomes
};

class MergeTable {
 public:
  /// Sets the merge of (left, right), replacing an earlier one (a later duplicate line wins, as in
  /// Hugging Face's map).
  void set(int32_t left, int32_t right, Merge merge);
  /// The merge of (left, right), or nullptr.
  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.merge;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  static size_t hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<size_t>(key);
  }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace loom::bpe
