// BatchedDataset; see batched_dataset.hpp.
#include "batched_dataset.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "epoch_order.hpp"
#include "loom/sdk/error.hpp"

namespace loom_datasets {

size_t copy_text(const std::string& text, char* out, size_t capacity) {
  if (out != nullptr && capacity > 0) {
    std::memcpy(out, text.data(), std::min(capacity, text.size()));
    if (text.size() < capacity) out[text.size()] = '\0';
  }
  return text.size();
}

int32_t padded_length(int32_t longest, int32_t max_seq_length) {
  const int32_t rounded = (std::max(longest, 1) + 7) / 8 * 8;
  return std::min(rounded, max_seq_length);
}

void BatchedDataset::start(const loom::DatasetSetup& setup, std::vector<uint64_t> group_sizes, bool shuffle,
                           bool drop_last, const loom::BatchLimits& limits, const TokenBudget& budget) {
  if (setup.world_size < 1 || setup.rank < 0 || setup.rank >= setup.world_size)
    throw loom::Error("dataset: rank " + std::to_string(setup.rank) + " of world size " +
                      std::to_string(setup.world_size) + " is not a valid process");
  if (budget.enabled() && drop_last)
    throw loom::Error("dataset: drop_last does not combine with batch_tokens");
  group_sizes_ = std::move(group_sizes);
  shuffle_ = shuffle;
  drop_last_ = drop_last;
  seed_ = setup.seed;
  slicing_ = RankSlicing{setup.rank, setup.world_size, static_cast<uint64_t>(limits.batch_size)};
  limits_ = limits;
  budget_ = budget;
  total_ = 0;
  for (uint64_t size : group_sizes_) total_ += size;
  if (budget_.enabled()) {
    // A rank's share depends on the packing (counted on demand by rank_size()); every rank can
    // have an instance when the epoch has one per rank.
    rank_size_ = total_;
    if (total_ < static_cast<uint64_t>(setup.world_size))
      throw loom::Error("dataset: " + std::to_string(total_) + " instances cannot give each of " +
                        std::to_string(setup.world_size) + " ranks one: use fewer ranks");
  } else {
    rank_size_ = rank_share(total_, slicing_, drop_last_);
    if (rank_size_ == 0)
      throw loom::Error("dataset: rank " + std::to_string(setup.rank) + " gets no instance (" +
                        std::to_string(total_) + " instances for " + std::to_string(setup.world_size) +
                        " ranks of batch_size " + std::to_string(limits_.batch_size) +
                        (drop_last_ ? " with drop_last" : "") + "): use fewer ranks or a smaller batch_size");
  }
  budget_rank_size_ = UINT64_MAX;
  cursor_ = {0, 0};
  order_epoch_ = UINT64_MAX;
  window_epoch_ = UINT64_MAX;
  open_ = true;
}

void BatchedDataset::require_open() const {
  if (!open_) throw loom::Error("dataset: open() must be called first");
}

uint64_t BatchedDataset::rank_size() const {
  if (!budget_.enabled() || slicing_.world == 1) return rank_size_;
  // Reads the epoch's rows once through load_row; the host does not ask for it during a run.
  if (budget_rank_size_ == UINT64_MAX)
    budget_rank_size_ = const_cast<BatchedDataset*>(this)->budget_rank_share();
  return budget_rank_size_;
}

loom::BatchLimits BatchedDataset::limits() const {
  require_open();
  return limits_;
}

void BatchedDataset::seek(const loom::DatasetCursor& cursor) {
  require_open();
  if (cursor.position > total_)
    throw loom::Error("dataset: cursor position " + std::to_string(cursor.position) + " is past the " +
                      std::to_string(total_) +
                      " instances of an epoch (was the checkpoint made with other data?)");
  cursor_ = cursor;
  order_epoch_ = UINT64_MAX;
  window_epoch_ = UINT64_MAX;
  // By token budget the position must start a bin of its window: checked here, at resume.
  if (budget_.enabled() && cursor.position < total_) load_window(cursor.epoch, cursor.position);
}

uint64_t BatchedDataset::epoch_end(uint64_t start) const {
  if (!drop_last_) return total_;
  const uint64_t global_batch = static_cast<uint64_t>(slicing_.world) * slicing_.batch_size;
  return start + (total_ - std::min(start, total_)) / global_batch * global_batch;
}

void BatchedDataset::prepare_order() {
  if (order_epoch_ == cursor_.epoch) return;
  order_start_ = cursor_.position;
  order_end_ = epoch_end(order_start_);
  order_ = rank_order(group_sizes_, shuffle_, seed_, cursor_.epoch, order_start_, order_end_, slicing_);
  order_epoch_ = cursor_.epoch;
}

void BatchedDataset::check_length(const Row& row) const {
  if (row.ids.size() > static_cast<size_t>(limits_.max_seq_length))
    throw loom::Error("dataset: an instance has " + std::to_string(row.ids.size()) +
                      " tokens, more than max_seq_length " + std::to_string(limits_.max_seq_length));
}

loom::BatchShape BatchedDataset::next_batch(const loom::BatchBuffers& out) {
  require_open();
  if (budget_.enabled()) return next_budget_batch(out);
  prepare_order();
  if (cursor_.position >= order_end_) {
    cursor_ = {cursor_.epoch + 1, 0};
    prepare_order();
  }
  // Every rank advances the global cursor by the whole global batch; this rank's rows are its
  // block of it, taken in order from its own list (all earlier global batches were full).
  const uint64_t global_batch = static_cast<uint64_t>(slicing_.world) * slicing_.batch_size;
  const uint64_t global_rows = std::min(global_batch, order_end_ - cursor_.position);
  const uint64_t first = (cursor_.position - order_start_) / global_batch * slicing_.batch_size;
  const auto rows = static_cast<int32_t>(slicing_.rows_of(global_rows));
  rows_.resize(static_cast<size_t>(rows));
  row_pointers_.resize(static_cast<size_t>(rows));
  for (int32_t r = 0; r < rows; ++r) {
    Row& row = rows_[static_cast<size_t>(r)];
    row = Row{};
    load_row(order_[first + static_cast<uint64_t>(r)], cursor_.epoch, row);
    check_length(row);
    row_pointers_[static_cast<size_t>(r)] = &row;
  }
  loom::BatchShape shape = write_rows(row_pointers_.data(), order_.data() + first, rows, out);
  cursor_.position += global_rows;
  shape.last_in_epoch = cursor_.position == order_end_ ? 1 : 0;
  return shape;
}

loom::BatchShape BatchedDataset::write_rows(const Row* const* rows_in, const uint64_t* instances,
                                            int32_t rows, const loom::BatchBuffers& out) const {
  int32_t longest = 0;
  for (int32_t r = 0; r < rows; ++r)
    longest = std::max(longest, static_cast<int32_t>(rows_in[r]->ids.size()));
  const int32_t seq = rows == 0 ? 0 : padded_length(longest, limits_.max_seq_length);
  const int32_t predictions = limits_.max_predictions;
  for (int32_t r = 0; r < rows; ++r) {
    const Row& row = *rows_in[r];
    const size_t base = static_cast<size_t>(r) * static_cast<size_t>(seq);
    const auto length = static_cast<int32_t>(row.ids.size());
    for (int32_t c = 0; c < seq; ++c) {
      const bool real = c < length;
      if (out.input_ids) out.input_ids[base + c] = real ? row.ids[static_cast<size_t>(c)] : 0;
      if (out.token_type_ids) out.token_type_ids[base + c] = real ? row.types[static_cast<size_t>(c)] : 0;
      if (out.attention_mask) out.attention_mask[base + c] = real ? 1 : 0;
      if (out.mlm_labels) out.mlm_labels[base + c] = loom::kIgnoreLabel;
    }
    if (out.instance_ids) out.instance_ids[r] = instances[r];
    switch (limits_.task) {
      case loom::BatchTask::pretraining: {
        const size_t prediction_base = static_cast<size_t>(r) * static_cast<size_t>(predictions);
        if (row.positions.size() > static_cast<size_t>(predictions))
          throw loom::Error("dataset: an instance has more masked positions than max_predictions");
        for (int32_t p = 0; p < predictions; ++p) {
          const bool used = static_cast<size_t>(p) < row.positions.size();
          if (out.masked_positions) out.masked_positions[prediction_base + p] = used ? row.positions[p] : 0;
          if (out.masked_ids) out.masked_ids[prediction_base + p] = used ? row.masked_ids[p] : 0;
        }
        if (out.mlm_labels)
          for (size_t p = 0; p < row.positions.size(); ++p)
            out.mlm_labels[base + static_cast<size_t>(row.positions[p])] = row.masked_ids[p];
        if (out.next_sentence_labels) out.next_sentence_labels[r] = row.next_sentence;
        break;
      }
      case loom::BatchTask::classification:
        if (out.labels) out.labels[r] = row.label;
        break;
      case loom::BatchTask::span_extraction:
        if (out.start_positions) out.start_positions[r] = row.start;
        if (out.end_positions) out.end_positions[r] = row.end;
        break;
    }
  }
  loom::BatchShape shape{};
  shape.rows = rows;
  shape.seq = seq;
  shape.predictions = limits_.task == loom::BatchTask::pretraining ? predictions : 0;
  shape.epoch = cursor_.epoch;
  return shape;
}

}  // namespace loom_datasets
