// BatchStaging: one host batch → the device BatchView blocks read (block.hpp).
//
// Device memory for the largest batch is allocated once at construction; `upload` only copies.
// On the way it derives what blocks need: the list of MLM-labelled rows and their labels (the
// heads gather only those rows before the decoder GEMM), the additive key mask (0 / kMaskedKey)
// from the attention mask, labels normalised to kIgnoreIndex (any negative value, e.g. Hugging
// Face's -100, means "ignored"; regression targets pass unchanged as f32), span positions
// clamped to [0, T] (T = ignored) as Hugging Face does, zeros / ones for absent token types /
// attention mask, and the non-[PAD] positions (the word-embedding gradient skips [PAD], as
// Hugging Face's padding_idx does). A batch with padding whose rows each hold their real tokens
// first also gets its packed form (loom/sdk/packed_tokens.hpp): the real tokens back to back, for
// the blocks a model runs unpadded.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"

namespace loom::host {

/// One batch in host memory, row-major. nullptr = absent.
struct HostBatch {
  int64_t batch = 0;                              ///< rows B
  int64_t seq = 0;                                ///< columns T
  const int32_t* input_ids = nullptr;             ///< [B·T], required
  const int32_t* token_type_ids = nullptr;        ///< [B·T]; absent: all 0
  const int32_t* attention_mask = nullptr;        ///< [B·T], 1 = token, 0 = padding; absent: all 1
  const int32_t* mlm_labels = nullptr;            ///< [B·T], token id to predict or negative
  const int32_t* next_sentence_labels = nullptr;  ///< [B]
  const int32_t* labels = nullptr;                ///< [B]
  const float* targets = nullptr;                 ///< [B] regression targets; when set they are
                                                  ///< BatchView::labels (f32) and `labels` is unused
  const int32_t* start_positions = nullptr;       ///< [B]
  const int32_t* end_positions = nullptr;         ///< [B]
};

/// The packed form of the last upload: the view layers that accept packed tokens get (batch 1,
/// seq N), and where each packed token sits in the padded batch, for the host's gathers and
/// scatters between the two layouts.
struct PackedBatch {
  loom::BatchView view;    ///< sequences = B, sequence_starts, token_positions, max_sequence
  loom::Tensor token_rows;  ///< i32 [N]: b·T + t of each packed token, ascending
};

class BatchStaging {
 public:
  /// Allocates device buffers for batches up to `limits` (batch, seq, max_masked). Positions
  /// holding `pad_token_id` are left out of BatchView::word_rows.
  BatchStaging(loom::Backend& backend, const loom::ActivationShape& limits, int32_t pad_token_id = 0);

  /// Copies `batch` to the device; the view stays valid until the next upload. Throws
  /// std::invalid_argument when the batch exceeds the limits or lacks input_ids.
  const loom::BatchView& upload(const HostBatch& batch);

  /// The packed form of the last upload; nullptr when it has no padding (nothing to remove), a row
  /// without real tokens, or a row whose real tokens are not its first ones.
  const PackedBatch* packed() const { return packed_valid_ ? &packed_ : nullptr; }

  const loom::ActivationShape& limits() const { return limits_; }
  /// The device memory a staging for batches up to `limits` allocates.
  static size_t device_bytes(const loom::ActivationShape& limits);

 private:
  loom::Tensor slot(size_t index, loom::DType dtype, std::initializer_list<int64_t> shape) const;
  void put(const int32_t* values, const loom::Tensor& view);

  loom::Backend& backend_;
  loom::ActivationShape limits_;
  loom::Buffer device_;
  std::vector<size_t> offsets_;       // byte offset of each slot in device_
  std::vector<int32_t> masked_rows_;  // host staging, capacity max_masked
  std::vector<int32_t> masked_labels_;
  std::vector<int32_t> row_values_;                // [B] normalised labels / clamped positions
  std::vector<int32_t> word_rows_, word_row_ids_;  // capacity B·T
  int32_t pad_token_id_;
  loom::BatchView view_{};
  /// Fills packed_ from the host mask of `batch`; false when the batch cannot or need not pack.
  bool pack(const HostBatch& batch);
  std::vector<int32_t> starts_, positions_, token_rows_;  // host staging of the packed form
  PackedBatch packed_{};
  bool packed_valid_ = false;
};

}  // namespace loom::host
