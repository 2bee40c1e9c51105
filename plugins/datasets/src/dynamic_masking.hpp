// Dynamic masking at load time (`[data] masking = "dynamic"`), as LDDL's loader and Hugging Face's
// DataCollatorForLanguageModeling do it (docs/reference.md §2.6): every real token other than
// [CLS]/[SEP]/[PAD] is chosen independently with probability masked_lm_prob; a chosen token becomes
// [MASK] with probability mask_ratio, else a uniformly random id in [0, vocab_size) with
// probability random_ratio / (1 - mask_ratio), else stays. No cap on the count. The generator is
// keyed by (seed, epoch, instance), so a resumed run masks exactly as the uninterrupted one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "batched_dataset.hpp"

namespace loom_datasets {

struct DynamicMasking {
  double masked_lm_prob = 0.15;
  double mask_ratio = 0.8;
  double random_ratio = 0.1;
  int32_t vocab_size = 0;
  int32_t cls = -1;
  int32_t sep = -1;
  int32_t pad = -1;
  int32_t mask = -1;
};

/// Re-masks `row`: first restores the originals of any static masks (row.positions/masked_ids),
/// then draws new masks and replaces row.positions/masked_ids.
void apply_dynamic_masking(Row& row, const DynamicMasking& masking, uint64_t seed, uint64_t epoch,
                           uint64_t instance);

}  // namespace loom_datasets
