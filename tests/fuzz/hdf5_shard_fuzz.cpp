// libFuzzer target for the HDF5 pretraining shard reader of dataset/pretraining-shards
// (hdf5_shard.hpp, shard_values.hpp). The input chooses a shard that hdf5_shard_builder.hpp writes
// through libhdf5, and the vocabulary size its values are checked against. Properties, for a file
// that was not cut afterwards:
// - read_shard_shape accepts exactly the shards with all six keys as integer datasets of the right
//   rank and consistent, non-zero widths whose storage holds every declared value; every refusal is
//   a loom::IoError naming the file;
// - read_shard of an accepted shard refuses it when a stored value does not fit the type its key is
//   read as (int32, int8), and otherwise returns N·L, N·P and N values per key, each the stored one:
//   no conversion changes a value;
// - check_shard_values refuses with loom::IoError only.
// For a cut file every refusal is a loom::IoError too.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz_support.hpp"
#include "hdf5_shard.hpp"
#include "hdf5_shard_builder.hpp"
#include "loom/sdk/error.hpp"
#include "shard_values.hpp"

using loom_fuzz::BuiltKey;
using loom_fuzz::BuiltShard;
using loom_fuzz::require;

namespace {

// The reader's acceptance rule, from what was built.
bool valid_shard(const BuiltShard& shard) {
  for (std::size_t k = 0; k < std::size(loom_fuzz::kShardKeys); ++k) {
    const BuiltKey& key = shard.keys[k];
    if (!key.dataset || !key.integer || key.rank != loom_fuzz::kShardKeys[k].rank) return false;
    if (key.dims[0] != shard.keys[0].dims[0]) return false;
    unsigned __int128 count = 1;
    for (hsize_t extent : key.dims) count *= extent;
    if (count != 0 && !key.backed) return false;
  }
  for (std::size_t first : {std::size_t{0}, std::size_t{3}}) {  // L: keys 0-2, P: keys 3-4
    const hsize_t width = shard.keys[first].dims[1];
    if (width == 0 || width > static_cast<hsize_t>(std::numeric_limits<std::int32_t>::max())) return false;
    for (std::size_t k = first; k < first + (first == 0 ? 3 : 2); ++k)
      if (shard.keys[k].dims[1] != width) return false;
  }
  return true;
}

// Every recorded value of `key` fits T, the type the reader reads it as (unrecorded ones are the
// fill value 0).
template <typename T>
bool fits(const BuiltKey& key) {
  for (__int128 value : key.values)
    if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max()) return false;
  return true;
}

bool all_fit(const BuiltShard& shard) {
  return fits<std::int32_t>(shard.keys[0]) && fits<std::int8_t>(shard.keys[1]) && fits<std::int8_t>(shard.keys[2]) &&
         fits<std::int32_t>(shard.keys[3]) && fits<std::int32_t>(shard.keys[4]) && fits<std::int8_t>(shard.keys[5]);
}

template <typename T>
bool values_match(const std::vector<T>& read, const BuiltKey& key) {
  if (key.values.size() != read.size()) return true;  // not recorded (too large to write)
  for (std::size_t i = 0; i < read.size(); ++i)
    if (read[i] != key.values[i]) return false;
  return true;
}

bool all_match(const loom_datasets::ShardData& data, const BuiltShard& shard) {
  return values_match(data.input_ids, shard.keys[0]) && values_match(data.input_mask, shard.keys[1]) &&
         values_match(data.segment_ids, shard.keys[2]) && values_match(data.masked_positions, shard.keys[3]) &&
         values_match(data.masked_ids, shard.keys[4]) && values_match(data.next_sentence, shard.keys[5]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider fuzz(bytes, size);
  const std::int32_t vocab_size = fuzz.PickValueInArray({0, 2, 7, 30522});
  const std::string path = (loom_fuzz::scratch_directory() / "shard.hdf5").string();
  const BuiltShard shard = loom_fuzz::build_shard(fuzz, path);
  const bool valid = valid_shard(shard);

  loom_datasets::ShardShape shape;
  try {
    shape = loom_datasets::read_shard_shape(path);
  } catch (const loom::IoError& e) {
    require(shard.cut || !valid, "a valid shard is read");
    require(std::string(e.what()).rfind(path, 0) == 0, "a refusal names the file");
    return 0;
  }
  require(shard.cut || valid, "an invalid shard is refused");

  loom_datasets::ShardData data;
  try {
    data = loom_datasets::read_shard(path);
  } catch (const loom::IoError&) {
    require(shard.cut || !all_fit(shard), "the data of a shard whose shape was read is read when it fits");
    return 0;
  }
  require(shard.cut || all_fit(shard), "a value that does not fit the type it is read as is refused");
  const std::size_t n = data.shape.instances;
  require(data.shape.instances == shape.instances && data.shape.seq_length == shape.seq_length &&
              data.shape.predictions == shape.predictions,
          "read_shard and read_shard_shape agree");
  const std::size_t tokens = n * static_cast<std::size_t>(shape.seq_length);
  const std::size_t predictions = n * static_cast<std::size_t>(shape.predictions);
  require(data.input_ids.size() == tokens && data.input_mask.size() == tokens && data.segment_ids.size() == tokens &&
              data.masked_positions.size() == predictions && data.masked_ids.size() == predictions &&
              data.next_sentence.size() == n,
          "every key holds its declared values");
  if (!shard.cut) require(all_match(data, shard), "every value read is the stored one");
  try {
    loom_datasets::check_shard_values(data, path, {vocab_size, "the fuzz vocabulary"});
  } catch (const loom::IoError&) {
  }
  return 0;
}
