// dataset/pretraining-shards: MLM + NSP batches from HDF5 shards (hdf5_shard.hpp), ours or
// NVIDIA's. Options (docs/recipes.md): files (glob), batch_size, shuffle, drop_last, masking
// ("static" | "dynamic"), masked_lm_prob / mask_ratio / random_ratio (dynamic only),
// max_seq_length (optional check against the shards).
// Masked positions equal to 0 are padding (position 0 is always [CLS]); mlm_labels are -1
// elsewhere. Shards are read whole, one at a time: memory is bounded by the largest shard.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "batched_dataset.hpp"
#include "dynamic_masking.hpp"
#include "hdf5_shard.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom_datasets {

class PretrainingShards final : public BatchedDataset {
 public:
  explicit PretrainingShards(loom::ComponentContext& context);
  void open(const loom::DatasetSetup& setup) override;
  const char* label_name(int32_t) const override { return nullptr; }
  size_t describe_instance(uint64_t id, char* json, size_t capacity) const override;

 protected:
  void load_row(uint64_t instance, uint64_t epoch, Row& row) override;

 private:
  std::string pattern_;
  int32_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  bool dynamic_;
  int32_t max_seq_length_;  // 0 = take the shards'
  DynamicMasking masking_;
  std::vector<std::string> files_;
  std::vector<uint64_t> first_instance_;  // per file, prefix sums
  ShardShape shape_;
  size_t loaded_file_ = SIZE_MAX;
  ShardData loaded_;
};

}  // namespace loom_datasets
