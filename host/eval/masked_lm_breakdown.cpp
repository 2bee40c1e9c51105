// Masked-LM metrics by input category; see masked_lm_breakdown.hpp.
#include "eval/masked_lm_breakdown.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace loom::host {

void MaskedLmBreakdown::add(const std::vector<float>& logits, int64_t vocab, const int32_t* input_ids,
                            const int32_t* mlm_labels, int64_t positions) {
  size_t row = 0;
  const size_t rows = vocab > 0 ? logits.size() / static_cast<size_t>(vocab) : 0;
  for (int64_t i = 0; i < positions; ++i) {
    const int32_t label = mlm_labels[i];
    if (label < 0) continue;
    if (row >= rows)
      throw std::runtime_error("masked-LM breakdown: " + std::to_string(rows) +
                               " logit rows for more labelled positions");
    const float* scores = logits.data() + row * static_cast<size_t>(vocab);
    ++row;
    // Cross-entropy in double: log-sum-exp around the row's maximum.
    int64_t best = 0;
    for (int64_t v = 1; v < vocab; ++v)
      if (scores[v] > scores[best]) best = v;
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(scores[v]) - scores[best]);
    const double loss = std::log(sum) + scores[best] - static_cast<double>(scores[label]);

    const MaskedInput kind = input_ids[i] == mask_token_id_ ? MaskedInput::mask
                             : input_ids[i] == label        ? MaskedInput::kept
                                                            : MaskedInput::random;
    Category& category = categories_[static_cast<size_t>(kind)];
    category.total += 1;
    category.correct += best == label ? 1 : 0;
    category.loss_sum += loss;
    target_counts_[label] += 1;
  }
  if (row != rows)
    throw std::runtime_error("masked-LM breakdown: " + std::to_string(rows) + " logit rows for " +
                             std::to_string(row) + " labelled positions");
}

nlohmann::json MaskedLmBreakdown::metrics() const {
  nlohmann::json out;
  const char* names[] = {"mask", "kept", "random"};
  uint64_t all = 0;
  for (size_t k = 0; k < categories_.size(); ++k) {
    const Category& c = categories_[k];
    const double n = static_cast<double>(c.total);
    const std::string prefix = std::string("eval_mlm_") + names[k];
    out[prefix + "_accuracy"] = c.total == 0 ? 0.0 : static_cast<double>(c.correct) / n;
    out[prefix + "_loss"] = c.total == 0 ? 0.0 : c.loss_sum / n;
    out[prefix + "_tokens"] = c.total;
    all += c.total;
  }
  int32_t commonest = -1;
  uint64_t commonest_count = 0;
  for (const auto& [token, count] : target_counts_)
    if (count > commonest_count || (count == commonest_count && token < commonest))
      commonest = token, commonest_count = count;
  out["eval_mlm_unigram_baseline"] =
      all == 0 ? 0.0 : static_cast<double>(commonest_count) / static_cast<double>(all);
  out["eval_mlm_unigram_token"] = commonest;
  return out;
}

}  // namespace loom::host
