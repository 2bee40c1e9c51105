// Host batch buffers; see host_batch_buffers.hpp.
#include "model/host_batch_buffers.hpp"

#include <cstring>
#include <stdexcept>

namespace loom::host {

HostBatchBuffers::HostBatchBuffers(const loom::BatchLimits& limits) : limits_(limits) {
  const size_t rows = static_cast<size_t>(limits.batch_size);
  const size_t cells = rows * static_cast<size_t>(limits.max_seq_length);
  const size_t predictions = rows * static_cast<size_t>(limits.max_predictions);
  input_ids_.assign(cells, 0);
  token_type_ids_.assign(cells, 0);
  attention_mask_.assign(cells, 0);
  instance_ids_.assign(rows, 0);
  buffers_.input_ids = input_ids_.data();
  buffers_.token_type_ids = token_type_ids_.data();
  buffers_.attention_mask = attention_mask_.data();
  buffers_.instance_ids = instance_ids_.data();
  switch (limits.task) {
    case loom::BatchTask::pretraining:
      mlm_labels_.assign(cells, loom::kIgnoreLabel);
      masked_positions_.assign(predictions, 0);
      masked_ids_.assign(predictions, 0);
      next_sentence_labels_.assign(rows, 0);
      buffers_.mlm_labels = mlm_labels_.data();
      buffers_.masked_positions = predictions > 0 ? masked_positions_.data() : nullptr;
      buffers_.masked_ids = predictions > 0 ? masked_ids_.data() : nullptr;
      buffers_.next_sentence_labels = next_sentence_labels_.data();
      break;
    case loom::BatchTask::classification:
      labels_.assign(rows, 0);
      buffers_.labels = labels_.data();
      if (regression()) targets_.assign(rows, 0.0f);
      break;
    case loom::BatchTask::span_extraction:
      start_positions_.assign(rows, 0);
      end_positions_.assign(rows, 0);
      buffers_.start_positions = start_positions_.data();
      buffers_.end_positions = end_positions_.data();
      break;
  }
}

HostBatch HostBatchBuffers::view(const loom::BatchShape& shape) const {
  HostBatch batch;
  batch.batch = shape.rows;
  batch.seq = shape.seq;
  batch.input_ids = input_ids_.data();
  batch.token_type_ids = token_type_ids_.data();
  batch.attention_mask = attention_mask_.data();
  if (!mlm_labels_.empty()) batch.mlm_labels = mlm_labels_.data();
  if (!next_sentence_labels_.empty()) batch.next_sentence_labels = next_sentence_labels_.data();
  if (regression())
    batch.targets = targets_.data();
  else if (!labels_.empty())
    batch.labels = labels_.data();
  if (!start_positions_.empty()) batch.start_positions = start_positions_.data();
  if (!end_positions_.empty()) batch.end_positions = end_positions_.data();
  return batch;
}

HostBatch HostBatchBuffers::next(loom::Dataset& dataset, loom::BatchShape& shape) {
  shape = dataset.next_batch(buffers_);
  // An empty batch: other ranks took the rest of the epoch's last global batch.
  if (shape.rows == 0 && shape.seq == 0) return view(shape);
  if (shape.rows < 1 || shape.rows > limits_.batch_size || shape.seq < 1 ||
      shape.seq > limits_.max_seq_length)
    throw std::runtime_error("dataset returned a batch of " + std::to_string(shape.rows) + " × " +
                             std::to_string(shape.seq) + ", outside its limits");
  if (regression())
    std::memcpy(targets_.data(), labels_.data(), static_cast<size_t>(shape.rows) * sizeof(float));
  return view(shape);
}

}  // namespace loom::host
