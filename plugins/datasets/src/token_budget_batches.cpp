// BatchedDataset's micro-batches by token budget (docs/decisions/token-budget-batches.md).
//
// The epoch's sequence (the order a world of one rank sees) is cut into windows of
// `budget_.window` consecutive positions, aligned at position 0. Each window's rows are loaded
// once, in sequence order (a shard dataset then reads each file once), and packed into bins by
// pack_by_token_budget. A global batch is the next `world` bins of the window; rank r takes the
// r-th, or no row when the window has fewer bins left than ranks. The cursor counts the
// sequences of consumed bins, so it stays a position of the epoch's sequence that any world size
// can resume from: the window is a function of (seed, epoch, position, options) alone.
#include <algorithm>
#include <string>

#include "batched_dataset.hpp"
#include "loom/sdk/error.hpp"
#include "token_budget_packing.hpp"

namespace loom_datasets {
namespace {

std::vector<uint32_t> row_lengths(const std::vector<Row>& rows) {
  std::vector<uint32_t> lengths(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) lengths[i] = static_cast<uint32_t>(rows[i].ids.size());
  return lengths;
}

}  // namespace

void BatchedDataset::prepare_global_order(uint64_t epoch, uint64_t position) {
  const uint64_t window_start = position / budget_.window * budget_.window;
  if (order_epoch_ == epoch && order_start_ <= window_start) return;
  order_start_ = window_start;
  order_end_ = total_;
  order_ = rank_order(group_sizes_, shuffle_, seed_, epoch, order_start_, order_end_, RankSlicing{0, 1, 1});
  order_epoch_ = epoch;
}

void BatchedDataset::load_window(uint64_t epoch, uint64_t position) {
  prepare_global_order(epoch, position);
  const uint64_t start = position / budget_.window * budget_.window;
  const uint64_t end = std::min(start + budget_.window, total_);
  window_instances_.assign(order_.begin() + static_cast<ptrdiff_t>(start - order_start_),
                           order_.begin() + static_cast<ptrdiff_t>(end - order_start_));
  window_rows_.resize(window_instances_.size());
  for (size_t i = 0; i < window_instances_.size(); ++i) {
    window_rows_[i] = Row{};
    load_row(window_instances_[i], epoch, window_rows_[i]);
    check_length(window_rows_[i]);
  }
  bins_ = pack_by_token_budget(row_lengths(window_rows_), budget_.tokens,
                               static_cast<uint32_t>(limits_.batch_size));
  next_bin_ = 0;
  next_bin_position_ = start;
  while (next_bin_position_ < position && next_bin_ < bins_.size())
    next_bin_position_ += bins_[next_bin_++].size();
  if (next_bin_position_ != position) {
    window_epoch_ = UINT64_MAX;
    throw loom::Error("dataset: cursor position " + std::to_string(position) + " of epoch " +
                      std::to_string(epoch) + " does not start a batch of the token-budget window [" +
                      std::to_string(start) + ", " + std::to_string(end) +
                      ") (was the checkpoint made with other batch_tokens, batch_tokens_window, batch_size, "
                      "seed or data?): resume with the options it was made with");
  }
  window_epoch_ = epoch;
}

loom::BatchShape BatchedDataset::next_budget_batch(const loom::BatchBuffers& out) {
  if (cursor_.position >= total_) cursor_ = {cursor_.epoch + 1, 0};
  const bool ready =
      window_epoch_ == cursor_.epoch && next_bin_position_ == cursor_.position && next_bin_ < bins_.size();
  if (!ready) load_window(cursor_.epoch, cursor_.position);
  const size_t world = static_cast<size_t>(slicing_.world);
  const size_t count = std::min(world, bins_.size() - next_bin_);
  uint64_t global_rows = 0;
  for (size_t b = next_bin_; b < next_bin_ + count; ++b) global_rows += bins_[b].size();
  const size_t rank = static_cast<size_t>(slicing_.rank);
  const TokenBin empty;
  const TokenBin& mine = rank < count ? bins_[next_bin_ + rank] : empty;
  row_pointers_.resize(mine.size());
  rows_instances_.resize(mine.size());
  for (size_t r = 0; r < mine.size(); ++r) {
    row_pointers_[r] = &window_rows_[mine[r]];
    rows_instances_[r] = window_instances_[mine[r]];
  }
  loom::BatchShape shape =
      write_rows(row_pointers_.data(), rows_instances_.data(), static_cast<int32_t>(mine.size()), out);
  next_bin_ += count;
  next_bin_position_ += global_rows;
  cursor_.position += global_rows;
  shape.last_in_epoch = cursor_.position == total_ ? 1 : 0;
  return shape;
}

uint64_t BatchedDataset::budget_rank_share() {
  const std::vector<uint64_t> order =
      rank_order(group_sizes_, shuffle_, seed_, 0, 0, total_, RankSlicing{0, 1, 1});
  const auto world = static_cast<size_t>(slicing_.world);
  const auto rank = static_cast<size_t>(slicing_.rank);
  uint64_t share = 0;
  Row row;
  for (uint64_t start = 0; start < total_; start += budget_.window) {
    const uint64_t end = std::min(start + budget_.window, total_);
    std::vector<uint32_t> lengths;
    for (uint64_t p = start; p < end; ++p) {
      row = Row{};
      load_row(order[p], 0, row);
      lengths.push_back(static_cast<uint32_t>(row.ids.size()));
    }
    const std::vector<TokenBin> bins =
        pack_by_token_budget(lengths, budget_.tokens, static_cast<uint32_t>(limits_.batch_size));
    for (size_t b = rank; b < bins.size(); b += world) share += bins[b].size();
  }
  return share;
}

}  // namespace loom_datasets
