// The sequences of a packed batch (BatchView's packed layout, loom/sdk/packed_tokens.hpp) as a
// layer walks them: where each starts, how long it is, and where its [heads, L, L] attention
// matrices sit in a region that holds every sequence's one after the other.
#pragma once

#include <cstdint>

#include "loom/sdk/block.hpp"

namespace loom_blocks {

/// True when `batch` is the packed view (hidden [1, N, H] of real tokens).
inline bool is_packed(const loom::BatchView& batch) {
  return batch.sequences > 0;
}

/// Σ L_s² over the sequences of a packed batch (the elements of one head's attention matrices);
/// 0 for a padded batch.
inline int64_t packed_pairs(const loom::BatchView& batch) {
  int64_t pairs = 0;
  for (int64_t s = 0; s < batch.sequences; ++s) {
    const int64_t length = batch.sequence_starts_host[s + 1] - batch.sequence_starts_host[s];
    pairs += length * length;
  }
  return pairs;
}

/// One sequence of a packed batch: tokens [start, start + length); its attention matrices start at
/// element `pairs_before`·heads of a region laid out sequence after sequence.
struct PackedSequence {
  int64_t start, length, pairs_before;
};

/// Calls fn(PackedSequence) for every sequence of a packed batch, in order.
template <typename Fn>
void for_each_sequence(const loom::BatchView& batch, Fn&& fn) {
  int64_t pairs = 0;
  for (int64_t s = 0; s < batch.sequences; ++s) {
    const int64_t start = batch.sequence_starts_host[s], length = batch.sequence_starts_host[s + 1] - start;
    fn(PackedSequence{start, length, pairs});
    pairs += length * length;
  }
}

}  // namespace loom_blocks
