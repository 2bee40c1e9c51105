// The values of a pretraining shard, range-checked when the shard is read (before any of its rows
// becomes a batch). Out-of-range values would otherwise pass silently — a segment id of 5 or an
// NSP label of 7 read as 1 — or fail far from their cause (an id past the vocabulary in the
// embedding lookup, naming neither file nor row). Every failure is a loom::IoError naming the
// file, the key, the row and the column.
#pragma once

#include <cstdint>
#include <string>

#include "hdf5_shard.hpp"

namespace loom_datasets {

/// What the values are checked against.
struct ShardValueLimits {
  int32_t vocab_size = 0;  ///< ids must be < this; 0 = unknown (only ≥ 0 is checked)
  std::string vocabulary;  ///< names the vocabulary in messages ("vocab.txt (30522 tokens)")
};

/// Checks every row of `data` (read from `path`):
/// - input_mask is 1 for the row's real tokens then 0 (a prefix: the reader takes its count as
///   the row's length);
/// - input_ids in [0, vocab_size); segment_ids and next_sentence_labels in {0, 1};
/// - masked_lm_positions, up to the first 0 (padding), in [1, length); masked_lm_ids there in
///   [0, vocab_size).
void check_shard_values(const ShardData& data, const std::string& path, const ShardValueLimits& limits);

}  // namespace loom_datasets
