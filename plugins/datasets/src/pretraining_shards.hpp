// dataset/pretraining-shards: MLM + NSP batches from HDF5 shards (hdf5_shard.hpp), ours or
// NVIDIA's. Options (docs/recipes.md): files (glob), batch_size, batch_tokens, batch_tokens_window,
// shuffle, drop_last, masking ("static" | "dynamic"), masked_lm_prob / mask_ratio / random_ratio
// (dynamic only), max_seq_length (optional check against the shards).
// Masked positions equal to 0 are padding (position 0 is always [CLS]); mlm_labels are -1
// elsewhere. Shards are read whole, one at a time: memory is bounded by the largest shard.
// At open() the shards' manifest.json is checked against the run's vocabulary
// (shard_manifest.hpp) and each shard's declared sizes against the file (hdf5_shard.hpp); when a
// shard is read, its values are range-checked (shard_values.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "batched_dataset.hpp"
#include "dynamic_masking.hpp"
#include "hdf5_shard.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/vocabulary_file.hpp"
#include "shard_manifest.hpp"
#include "shard_values.hpp"

namespace loom_datasets {

class PretrainingShards final : public BatchedDataset, public loom::DatasetVocabularyFile {
 public:
  explicit PretrainingShards(loom::ComponentContext& context);
  void use_vocabulary_file(const char* path, const char* sha256) override;
  void open(const loom::DatasetSetup& setup) override;
  const char* label_name(int32_t) const override { return nullptr; }
  size_t describe_instance(uint64_t id, char* json, size_t capacity) const override;

 protected:
  void load_row(uint64_t instance, uint64_t epoch, Row& row) override;

 private:
  std::string pattern_;
  std::string pattern_origin_;  ///< "file:line:col" of `files` in the recipe
  int32_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  TokenBudget budget_;  ///< batch_tokens / batch_tokens_window; off by default
  bool dynamic_;
  int32_t max_seq_length_;  // 0 = take the shards'
  DynamicMasking masking_;
  ShardValueLimits value_limits_;
  RunVocabularyFile vocabulary_file_;  ///< handed over by the host; empty when it gave none
  std::vector<std::string> files_;
  std::vector<uint64_t> first_instance_;  // per file, prefix sums
  ShardShape shape_;
  size_t loaded_file_ = SIZE_MAX;
  ShardData loaded_;
};

}  // namespace loom_datasets
