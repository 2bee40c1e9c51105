// BatchedDataset: the part of loom::Dataset every dataset here shares — epoch order per rank
// (epoch_order.hpp), the global (epoch, position) cursor, and packing rows into the host's buffers with
// per-batch padding to the longest row rounded up to a multiple of 8 (dataset.hpp contract).
// Micro-batches hold batch_size sequences, or, with a token budget (token_budget_options.hpp),
// the bins best-fit packs from windows of the epoch's sequence (token_budget_batches.cpp).
// A concrete dataset reads its options, then in `open()` calls `start()` with its group sizes and
// limits, and implements `load_row` (one instance as unpadded token ids plus labels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "epoch_order.hpp"
#include "loom/sdk/dataset.hpp"
#include "token_budget_options.hpp"
#include "token_budget_packing.hpp"

namespace loom_datasets {

/// One instance before padding.
struct Row {
  std::vector<int32_t> ids;         ///< real tokens only
  std::vector<int32_t> types;       ///< same length as ids
  std::vector<int32_t> positions;   ///< pretraining: masked positions, ascending
  std::vector<int32_t> masked_ids;  ///< pretraining: original ids there
  int32_t next_sentence = 0;
  int32_t label = 0;
  int32_t start = 0;
  int32_t end = 0;
};

/// Copies `text` into a caller buffer per the SDK's convention: min(size, capacity) bytes, a NUL
/// when it fits; returns text.size().
size_t copy_text(const std::string& text, char* out, size_t capacity);

/// Rounds `longest` up to a multiple of 8, capped at `max_seq_length` (at least 8 when possible).
int32_t padded_length(int32_t longest, int32_t max_seq_length);

class BatchedDataset : public loom::Dataset {
 public:
  uint64_t size() const override { return total_; }
  /// By token budget on more than one rank: epoch 0's count, from a pass over the data on the
  /// first call (the packing decides it); not to be called while another thread reads batches.
  uint64_t rank_size() const override;
  loom::BatchLimits limits() const override;
  loom::DatasetCursor cursor() const override { return cursor_; }
  void seek(const loom::DatasetCursor& cursor) override;
  loom::BatchShape next_batch(const loom::BatchBuffers& out) override;

 protected:
  /// Call at the end of `open()`. `group_sizes`: instances per group (file) in id order. A
  /// `budget` that is enabled fills micro-batches by real tokens (limits.batch_size is then the
  /// row cap) and excludes `drop_last`.
  void start(const loom::DatasetSetup& setup, std::vector<uint64_t> group_sizes, bool shuffle, bool drop_last,
             const loom::BatchLimits& limits, const TokenBudget& budget = {});
  /// Fills `row` with instance `instance` as seen in `epoch` (epoch matters for dynamic masking).
  virtual void load_row(uint64_t instance, uint64_t epoch, Row& row) = 0;
  uint64_t seed() const { return seed_; }

 private:
  void require_open() const;
  /// Builds this rank's order for the cursor's epoch from the cursor's position when it lacks it.
  void prepare_order();
  /// Where the current epoch ends (before a dropped final global batch under drop_last).
  uint64_t epoch_end(uint64_t start) const;
  /// Throws when a loaded row does not fit the buffers' columns.
  void check_length(const Row& row) const;
  /// Writes `count` rows (and their instance ids) densely into `out`; fills rows, seq,
  /// predictions and epoch of the shape (the caller sets last_in_epoch).
  loom::BatchShape write_rows(const Row* const* rows, const uint64_t* instances, int32_t count,
                              const loom::BatchBuffers& out) const;

  // Batches by token budget (token_budget_batches.cpp).
  loom::BatchShape next_budget_batch(const loom::BatchBuffers& out);
  /// Loads and packs the window holding `position` of `epoch` and skips its bins up to
  /// `position`; throws when `position` is not where one of them starts.
  void load_window(uint64_t epoch, uint64_t position);
  /// The epoch's sequence from the window holding `position` on, as one rank of a world of one sees it.
  void prepare_global_order(uint64_t epoch, uint64_t position);
  /// Instances this rank visits in epoch 0 by token budget (a pass over the epoch's lengths).
  uint64_t budget_rank_share();

  std::vector<uint64_t> group_sizes_;
  bool shuffle_ = true;
  bool drop_last_ = false;
  bool open_ = false;
  uint64_t seed_ = 0;
  RankSlicing slicing_;
  uint64_t total_ = 0;
  uint64_t rank_size_ = 0;
  loom::BatchLimits limits_{};
  loom::DatasetCursor cursor_{0, 0};
  uint64_t order_epoch_ = UINT64_MAX;
  uint64_t order_start_ = 0;  // sequence position order_ starts at (a global batch boundary)
  uint64_t order_end_ = 0;    // where that epoch ends for this order
  std::vector<uint64_t> order_;
  std::vector<Row> rows_;
  std::vector<const Row*> row_pointers_;
  std::vector<uint64_t> rows_instances_;  // instance ids of a token-budget batch's rows

  TokenBudget budget_;
  uint64_t window_epoch_ = UINT64_MAX;  // the loaded window's epoch (UINT64_MAX: none)
  std::vector<uint64_t> window_instances_;          // the window's instance ids, in sequence order
  std::vector<Row> window_rows_;                    // and their rows
  std::vector<TokenBin> bins_;                      // the window's micro-batches, in consumption order
  size_t next_bin_ = 0;                             // first bin not yet consumed
  uint64_t next_bin_position_ = 0;                  // the cursor position where it starts
  mutable uint64_t budget_rank_size_ = UINT64_MAX;  // computed on first use
};

}  // namespace loom_datasets
