// TokenBudget options; see token_budget_options.hpp.
#include "token_budget_options.hpp"

#include <optional>

namespace loom_datasets {

TokenBudget read_token_budget(loom::Options& options, int32_t batch_size, bool drop_last) {
  TokenBudget budget;
  const std::optional<int64_t> tokens = options.optional<int64_t>("batch_tokens", loom::Range{1, 1e12});
  const std::optional<int64_t> window =
      options.optional<int64_t>("batch_tokens_window", loom::Range{1, 1 << 24});
  if (!tokens) {
    if (window && !options.has("batch_tokens"))
      options.fail(
          "batch_tokens_window",
          "applies to batches by token budget only: set batch_tokens, or remove batch_tokens_window");
    return budget;
  }
  if (drop_last)
    options.fail("drop_last",
                 "does not combine with batch_tokens (batches by token budget hold varying numbers of "
                 "sequences, so no batch is 'short'): remove drop_last or batch_tokens");
  budget.tokens = static_cast<uint64_t>(*tokens);
  budget.window =
      window ? static_cast<uint64_t>(*window) : kDefaultWindowPerRow * static_cast<uint64_t>(batch_size);
  return budget;
}

}  // namespace loom_datasets
