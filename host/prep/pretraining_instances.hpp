// Pretraining instances: NSP sentence pairs and static MLM masks from tokenized documents,
// exactly as BERT's create_pretraining_data.py (docs/reference.md §2.6–§2.8) does it:
// create_instances_from_document (target length with short_seq_prob, random-next from another
// document with ≤ 10 tries and "put back" of unused sentences, truncate_seq_pair trimming the
// longer side from the front or back at random) and create_masked_lm_predictions
// (num_to_predict = min(max_predictions, max(1, round(len·p))), 80/10/10 by default, optional
// whole-word masking). Every random draw goes through PythonRandom in the reference's order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "prep/python_random.hpp"

namespace loom::host {

/// A document: its sentences, each a list of token ids (no [CLS]/[SEP]).
using TokenizedDocument = std::vector<std::vector<int32_t>>;

struct MaskingOptions {
  int32_t max_seq_length = 128;
  int32_t max_predictions = 20;
  double masked_lm_prob = 0.15;
  double short_seq_prob = 0.1;
  double mask_ratio = 0.8;    ///< chosen positions replaced by [MASK]
  double random_ratio = 0.1;  ///< chosen positions replaced by a random vocabulary id (rest: kept)
  bool whole_word_masking = false;
};

/// The vocabulary facts masking needs.
struct MaskingVocabulary {
  int32_t vocab_size;
  int32_t cls;
  int32_t sep;
  int32_t mask;
  std::vector<uint8_t> is_continuation;  ///< per id: 1 for "##x" pieces (whole-word masking)
};

/// One training instance; `tokens` is `[CLS] A [SEP] B [SEP]` after masking, unpadded.
struct PretrainingInstance {
  std::vector<int32_t> tokens;
  std::vector<int8_t> segment_ids;
  std::vector<int32_t> masked_positions;  ///< ascending
  std::vector<int32_t> masked_ids;        ///< original ids at masked_positions
  bool is_random_next = false;
};

/// Chooses and applies the masks of one sequence (create_masked_lm_predictions). `tokens` is
/// modified in place; positions and original ids are stored in `instance`.
void mask_tokens(PretrainingInstance& instance, const MaskingOptions& options, const MaskingVocabulary& vocab,
                 PythonRandom& rng);

/// Appends the instances of `documents[document_index]` (create_instances_from_document).
void create_instances_from_document(const std::vector<TokenizedDocument>& documents, size_t document_index,
                                    const MaskingOptions& options, const MaskingVocabulary& vocab,
                                    PythonRandom& rng, std::vector<PretrainingInstance>& out);

/// The reference's per-shard driver: drops empty documents, shuffles them, runs `dupe_factor`
/// passes of create_instances_from_document over every document, shuffles the instances.
std::vector<PretrainingInstance> create_training_instances(std::vector<TokenizedDocument> documents,
                                                           int32_t dupe_factor, const MaskingOptions& options,
                                                           const MaskingVocabulary& vocab, PythonRandom& rng);

}  // namespace loom::host
