// BatchedDataset: the part of loom::Dataset every dataset here shares — epoch order per rank
// (epoch_order.hpp), the global (epoch, position) cursor, and packing rows into the host's buffers with
// per-batch padding to the longest row rounded up to a multiple of 8 (dataset.hpp contract).
// A concrete dataset reads its options, then in `open()` calls `start()` with its group sizes and
// limits, and implements `load_row` (one instance as unpadded token ids plus labels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "epoch_order.hpp"
#include "loom/sdk/dataset.hpp"

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
  uint64_t rank_size() const override { return rank_size_; }
  loom::BatchLimits limits() const override;
  loom::DatasetCursor cursor() const override { return cursor_; }
  void seek(const loom::DatasetCursor& cursor) override;
  loom::BatchShape next_batch(const loom::BatchBuffers& out) override;

 protected:
  /// Call at the end of `open()`. `group_sizes`: instances per group (file) in id order.
  void start(const loom::DatasetSetup& setup, std::vector<uint64_t> group_sizes, bool shuffle, bool drop_last,
             const loom::BatchLimits& limits);
  /// Fills `row` with instance `instance` as seen in `epoch` (epoch matters for dynamic masking).
  virtual void load_row(uint64_t instance, uint64_t epoch, Row& row) = 0;
  uint64_t seed() const { return seed_; }

 private:
  void require_open() const;
  /// Builds this rank's order for the cursor's epoch from the cursor's position when it lacks it.
  void prepare_order();
  /// Where the current epoch ends (before a dropped final global batch under drop_last).
  uint64_t epoch_end(uint64_t start) const;

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
};

}  // namespace loom_datasets
