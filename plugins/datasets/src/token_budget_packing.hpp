// TokenBudgetPacking: cuts a window of consecutive sequences into micro-batches ("bins") holding
// at most a budget of real tokens and at most a number of rows, by best-fit decreasing.
//
// Deterministic and independent of ranks: the bins of a window are a function of its lengths,
// the budget and the row cap only, so a data cursor counted in whole bins means the same thing
// on any world size (docs/decisions/token-budget-batches.md).
#pragma once

#include <cstdint>
#include <vector>

namespace loom_datasets {

/// One micro-batch: indices into the window, ascending.
using TokenBin = std::vector<uint32_t>;

/// Packs the sequences of a window (`lengths[i]` = real tokens of the window's i-th sequence).
/// Sequences are taken longest first (ties: earlier first); each goes into the open bin with the
/// least budget left that still fits it and holds fewer than `max_rows` rows (ties: the bin
/// opened first), else into a new bin. A sequence longer than `budget` gets a bin of its own.
/// Bins come back ordered by their first index, each bin's indices ascending; together they hold
/// every index exactly once. `budget` ≥ 1 and `max_rows` ≥ 1.
std::vector<TokenBin> pack_by_token_budget(const std::vector<uint32_t>& lengths, uint64_t budget,
                                           uint32_t max_rows);

}  // namespace loom_datasets
