// Reading pretraining shards in the HDF5 layout of BERT's create_pretraining_data.py
// (docs/reference.md §4.1): input_ids / input_mask / segment_ids [N,L], masked_lm_positions /
// masked_lm_ids [N,P], next_sentence_labels [N]; any integer storage type (NVIDIA's shards use
// int32 and int8, h5py writes what numpy had) is converted on read, and a value that does not fit
// the type it is read as (int32 for ids and positions, int8 for masks, segments and labels) is
// refused rather than saturated. Every failure — a file that is not HDF5 or is truncated, a missing
// key, a wrong rank or shape, a non-integer type, a value that does not fit, data that cannot be
// decompressed — throws loom::IoError naming the file and the key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom_datasets {

/// Dimensions of a shard, read from metadata only.
struct ShardShape {
  uint64_t instances = 0;   ///< N
  int32_t seq_length = 0;   ///< L
  int32_t predictions = 0;  ///< P
};

/// A whole shard in memory (one file at a time is what the dataset keeps).
struct ShardData {
  ShardShape shape;
  std::vector<int32_t> input_ids;         ///< [N·L]
  std::vector<int8_t> input_mask;         ///< [N·L]
  std::vector<int8_t> segment_ids;        ///< [N·L]
  std::vector<int32_t> masked_positions;  ///< [N·P]
  std::vector<int32_t> masked_ids;        ///< [N·P]
  std::vector<int8_t> next_sentence;      ///< [N]
};

/// Checks that every key is present with consistent shapes and integer type; reads no data.
ShardShape read_shard_shape(const std::string& path);

/// Reads every key of the shard.
ShardData read_shard(const std::string& path);

}  // namespace loom_datasets
