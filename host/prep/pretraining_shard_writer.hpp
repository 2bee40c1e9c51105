// Writes pretraining instances as an HDF5 shard in the layout of BERT's
// create_pretraining_data.py (docs/reference.md §4.1), so NVIDIA's loaders and ours read it alike:
//   input_ids [N,L] int32, input_mask [N,L] int8, segment_ids [N,L] int8,
//   masked_lm_positions [N,P] int32, masked_lm_ids [N,P] int32, next_sentence_labels [N] int8;
// zero-padded, gzip level 4 (h5py's default), chunked by rows. The file is written under a
// temporary name in the same directory and renamed into place only when complete, so a killed
// run never leaves a truncated file under the final name.
#pragma once

#include <filesystem>
#include <vector>

#include "prep/pretraining_instances.hpp"

namespace loom::host {

/// Writes `instances` to `path` (atomically, as above). Throws std::runtime_error naming the
/// file and the HDF5 key on failure, or when an instance does not fit L or P.
void write_pretraining_shard(const std::filesystem::path& path,
                             const std::vector<PretrainingInstance>& instances, int32_t max_seq_length,
                             int32_t max_predictions);

}  // namespace loom::host
