// Masked-LM accuracy and loss split by what the input held at each labelled position: [MASK]
// (80% under BERT's rule), the original token kept (10%) or a random token (10%). The overall
// figure NVIDIA and MLPerf report is dominated by the kept positions, where the answer is in the
// input, so only the [MASK] split says whether a model uses context. The unigram baseline (the
// share of the most frequent target) is what "always answer the commonest token" scores.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::host {

/// What the input held at a labelled position. A random replacement that happens to draw the
/// original token is indistinguishable from a kept one and counts as kept.
enum class MaskedInput : int { mask = 0, kept = 1, random = 2 };

class MaskedLmBreakdown {
 public:
  explicit MaskedLmBreakdown(int32_t mask_token_id) : mask_token_id_(mask_token_id) {}

  /// Adds one batch: `logits` holds one row of `vocab` scores per labelled position, in the
  /// row-major order of the positions where `mlm_labels` (length `positions`) is non-negative;
  /// `input_ids` is the model's input at the same positions.
  void add(const std::vector<float>& logits, int64_t vocab, const int32_t* input_ids,
           const int32_t* mlm_labels, int64_t positions);

  /// eval_mlm_{mask,kept,random}_{accuracy,loss,tokens}, eval_mlm_unigram_baseline and
  /// eval_mlm_unigram_token (the most frequent target).
  nlohmann::json metrics() const;

 private:
  struct Category {
    uint64_t correct = 0;
    uint64_t total = 0;
    double loss_sum = 0;  // nats, cross-entropy of each position summed
  };
  int32_t mask_token_id_;
  std::array<Category, 3> categories_{};
  std::unordered_map<int32_t, uint64_t> target_counts_;
};

}  // namespace loom::host
