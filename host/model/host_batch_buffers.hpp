// HostBatchBuffers: the host memory a Dataset writes batches into, sized once from its limits,
// and the HostBatch view of what one `next_batch` produced (for BatchStaging::upload). A
// regression dataset (classification with num_labels = 1) writes its f32 targets' bits into
// `labels` (dataset.hpp); `next` turns them back into floats, which the view hands on as `targets`.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch_staging.hpp"
#include "loom/sdk/dataset.hpp"

namespace loom::host {

class HostBatchBuffers {
 public:
  explicit HostBatchBuffers(const loom::BatchLimits& limits);

  /// The buffers to hand to Dataset::next_batch.
  const loom::BatchBuffers& buffers() const { return buffers_; }
  /// The batch `shape` describes, for upload; labels the task does not produce are absent.
  HostBatch view(const loom::BatchShape& shape) const;
  /// Reads the next batch from `dataset` and returns its view; `shape` receives the batch shape.
  /// A batch of 0 rows (this rank has none of an epoch's last global batch) is returned as is.
  HostBatch next(loom::Dataset& dataset, loom::BatchShape& shape);

  const loom::BatchLimits& limits() const { return limits_; }
  /// Host copies, row-major [rows × seq] / [rows] of the last batch.
  const std::vector<int32_t>& input_ids() const { return input_ids_; }
  const std::vector<int32_t>& attention_mask() const { return attention_mask_; }
  const std::vector<int32_t>& mlm_labels() const { return mlm_labels_; }
  const std::vector<int32_t>& next_sentence_labels() const { return next_sentence_labels_; }
  const std::vector<int32_t>& labels() const { return labels_; }
  /// Regression targets of the last batch (empty unless num_labels = 1).
  const std::vector<float>& targets() const { return targets_; }
  bool regression() const {
    return limits_.task == loom::BatchTask::classification && limits_.num_labels == 1;
  }
  const std::vector<uint64_t>& instance_ids() const { return instance_ids_; }

 private:
  loom::BatchLimits limits_;
  std::vector<int32_t> input_ids_, token_type_ids_, attention_mask_, mlm_labels_, masked_positions_,
      masked_ids_;
  std::vector<int32_t> next_sentence_labels_, labels_, start_positions_, end_positions_;
  std::vector<uint64_t> instance_ids_;
  std::vector<float> targets_;
  loom::BatchBuffers buffers_{};
};

}  // namespace loom::host
