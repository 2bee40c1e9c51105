// TokenBudget: the `batch_tokens` and `batch_tokens_window` options every dataset here reads
// (docs/data.md, "Batches by token budget"). Without `batch_tokens` a micro-batch holds
// `batch_size` sequences; with it, at most `batch_tokens` real tokens and at most `batch_size`
// rows, packed from windows of `batch_tokens_window` consecutive sequences.
#pragma once

#include <cstdint>

#include "loom/sdk/options.hpp"

namespace loom_datasets {

struct TokenBudget {
  uint64_t tokens = 0;  ///< real tokens per micro-batch; 0 = batches of batch_size sequences
  uint64_t window = 0;  ///< sequences packed together (consecutive positions of an epoch)
  bool enabled() const { return tokens != 0; }
};

/// Sequences read ahead per row of batch_size when batch_tokens_window is absent: enough that
/// best-fit finds a partner for most sequences, few enough that the order stays close to the
/// epoch's shuffle and a resume re-reads little (docs/decisions/token-budget-batches.md).
inline constexpr uint64_t kDefaultWindowPerRow = 16;

/// Reads batch_tokens / batch_tokens_window; reports misuse through `options` (naming the key).
TokenBudget read_token_budget(loom::Options& options, int32_t batch_size, bool drop_last);

}  // namespace loom_datasets
