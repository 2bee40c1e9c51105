// Dataset: training and evaluation examples delivered as integer batches with a resumable cursor.
//
// Implementations: `pretraining-shards` (HDF5 MLM+NSP shards), `text-classification` (GLUE TSV,
// JSONL), `squad` (SQuAD v1.1/v2.0 JSON), all in plugins/datasets.
// Contract:
// - Life cycle: the constructor reads options only (and touches no file under `loom check`);
//   `open()` reads/indexes the data once the host knows rank, world size, seed and tokenizer;
//   every other method requires a successful `open()`.
// - Order: epoch e visits every instance once in a sequence fixed by (seed, e) (or file order
//   when shuffling is off), the same for any number of ranks. The ranks consume it in global
//   batches of world_size × batch_size consecutive positions; rank r takes the r-th block of
//   batch_size. The last global batch of an epoch fills the ranks in order, so a later rank may
//   get fewer rows, or none (`rows` = 0, with world_size > 1 only): every instance is visited
//   exactly once per epoch by exactly one rank.
//   With token-budget batches (the first-party datasets' `batch_tokens`, docs/data.md) a global
//   batch is instead `world_size` consecutive micro-batches of a packing window; rank r takes the
//   r-th, and a rank may get `rows` = 0 at the end of any window, not only of an epoch.
// - Cursor: (epoch, position) = positions of `epoch`'s sequence consumed by all ranks together,
//   identical on every rank. Saving `cursor()` and later `seek()`-ing to it on a freshly opened
//   dataset with the same options reproduces the following global batches exactly (dynamic
//   masking included), whatever the world size then: a run resumes on more or fewer ranks
//   without skipping or repeating an instance.
// - Batches never straddle epochs: the last batch of an epoch may have fewer rows (unless the
//   dataset's `drop_last` option drops it); the next call starts epoch + 1.
// - Buffers: the host allocates them once from `limits()`; a batch writes `rows × seq` elements
//   densely (row stride = `seq`, the batch's longest sequence rounded up to a multiple of 8 and
//   capped at `limits().max_seq_length`). Pad positions hold id 0, type 0, mask 0, label -1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class Tokenizer;  // loom/sdk/tokenizer.hpp

/// The label value meaning "no loss here" in `mlm_labels` (PyTorch's ignore_index in BERT code).
inline constexpr int32_t kIgnoreLabel = -1;

/// What a dataset's batches are for (which label buffers it fills).
enum class BatchTask : int32_t {
  pretraining = 1,      ///< MLM + NSP: mlm_labels / masked_positions+masked_ids, next_sentence_labels
  classification = 2,   ///< sequence classification: labels
  span_extraction = 3,  ///< SQuAD-style QA: start_positions, end_positions
};

/// What the host hands to `Dataset::open`.
struct DatasetSetup {
  int32_t rank;                ///< this process, 0 ≤ rank < world_size
  int32_t world_size;          ///< processes sharing the data
  uint64_t seed;               ///< base of every random stream (shuffling, dynamic masking)
  const Tokenizer* tokenizer;  ///< the run's [tokenizer]; nullptr when the recipe has none
};

/// Sizes the host needs to allocate batch buffers; fixed after `open()`.
struct BatchLimits {
  BatchTask task;
  int32_t batch_size;       ///< most rows a batch has
  int32_t max_seq_length;   ///< most columns a batch has (`seq` ≤ this)
  int32_t max_predictions;  ///< columns of masked_positions/masked_ids (pretraining), else 0
  int32_t num_labels;       ///< classification: labels lie in [0, num_labels); 1 = regression
                            ///< (one real-valued target per row, see BatchBuffers::labels); else 0
};

/// Host-owned output buffers. Sizes: [B·S] = batch_size·max_seq_length elements,
/// [B·P] = batch_size·max_predictions, [B] = batch_size. Any pointer may be nullptr: that output
/// is then not written. Buffers a task does not produce are left untouched.
struct BatchBuffers {
  int32_t* input_ids;             ///< [B·S] token ids ([MASK]/random already substituted for MLM)
  int32_t* token_type_ids;        ///< [B·S] segment 0 / 1
  int32_t* attention_mask;        ///< [B·S] 1 real token, 0 padding
  int32_t* mlm_labels;            ///< [B·S] pretraining: original id at masked positions, else -1
  int32_t* masked_positions;      ///< [B·P] pretraining: masked positions ascending, then 0 (padding)
  int32_t* masked_ids;            ///< [B·P] pretraining: original ids at those positions, then 0
  int32_t* next_sentence_labels;  ///< [B] pretraining: 1 = B is a random sentence, 0 = true next
  int32_t* labels;                ///< [B] classification: class index; regression (num_labels = 1,
                                  ///< Hugging Face's convention): the f32 target's bits (memcpy)
  int32_t* start_positions;       ///< [B] span extraction: answer start token (0 = [CLS], no answer)
  int32_t* end_positions;         ///< [B] span extraction: answer end token (inclusive)
  uint64_t* instance_ids;         ///< [B] which instance each row is (0 ≤ id < size())
};

/// What `next_batch` produced.
struct BatchShape {
  int32_t rows;           ///< rows written, ≤ batch_size; 0 only when other ranks took the rest
                          ///< of the epoch's last global batch (seq is then 0 too)
  int32_t seq;            ///< columns per row in the [B·S] buffers (a multiple of 8 unless capped)
  int32_t predictions;    ///< columns per row in masked_positions/masked_ids (= max_predictions)
  int32_t last_in_epoch;  ///< 1 when this global batch consumed the last instance of `epoch`
  uint64_t epoch;         ///< the epoch these rows belong to
};

/// Where a rank is in the data; two integers, stored in checkpoints.
struct DatasetCursor {
  uint64_t epoch;     ///< current epoch, from 0
  uint64_t position;  ///< positions of `epoch` all ranks together have already consumed
};

class Dataset {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_DATASET;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "data";

  virtual ~Dataset() = default;

  /// Reads/indexes the data for this rank (and tokenizes text datasets with `setup.tokenizer`);
  /// the cursor starts at (0, 0). Throws loom::IoError naming the file (and key/line) on bad data,
  /// loom::ConfigError when the dataset needs a tokenizer and got none.
  virtual void open(const DatasetSetup& setup) = 0;
  /// Buffer sizes and task; valid after `open()`.
  virtual BatchLimits limits() const = 0;
  /// Instances in one epoch over all ranks.
  virtual uint64_t size() const = 0;
  /// Instances this rank visits in one epoch.
  virtual uint64_t rank_size() const = 0;
  /// Current position; save it in a checkpoint.
  virtual DatasetCursor cursor() const = 0;
  /// Moves to a saved position (from a run of any world size). Throws loom::Error when
  /// position > size().
  virtual void seek(const DatasetCursor& cursor) = 0;
  /// Writes the next batch into `out` and advances the cursor.
  virtual BatchShape next_batch(const BatchBuffers& out) = 0;
  /// Class name of a classification label (NUL-terminated, valid while the dataset lives);
  /// nullptr when out of range or not a classification dataset.
  virtual const char* label_name(int32_t label) const = 0;
  /// A JSON object describing instance `id` for evaluation (e.g. SQuAD: question id, the
  /// token → original-text map; classification: the line it came from). Writes min(needed,
  /// capacity) bytes and, when it fits, a NUL; returns the byte count needed without the NUL.
  virtual size_t describe_instance(uint64_t id, char* json, size_t capacity) const = 0;
};

LOOM_SDK_NAMESPACE_END
