// dataset/squad: span-extraction batches from SQuAD v1.1/v2.0 JSON (squad_reader.hpp,
// squad_features.hpp). Options (docs/recipes.md): file, mode ("train" | "eval"), max_seq_length,
// doc_stride, max_query_length, batch_size, batch_tokens, batch_tokens_window, shuffle, drop_last,
// max_dropped_fraction. Instances are features (windows); describe_instance gives what evaluation
// needs to map logits back to text. Training questions whose answer is not where answer_start
// points are dropped, as the reference does, and reported; more than max_dropped_fraction of them
// (default 1%) is refused (docs/decisions/dropped-examples.md).
#pragma once

#include <string>
#include <vector>

#include "batched_dataset.hpp"
#include "loom/sdk/plugin.hpp"
#include "squad_features.hpp"

namespace loom_datasets {

class Squad final : public BatchedDataset {
 public:
  explicit Squad(loom::ComponentContext& context);
  void open(const loom::DatasetSetup& setup) override;
  const char* label_name(int32_t) const override { return nullptr; }
  size_t describe_instance(uint64_t id, char* json, size_t capacity) const override;

 protected:
  void load_row(uint64_t instance, uint64_t epoch, Row& row) override;

 private:
  std::string file_;
  SquadOptions options_;
  int32_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  TokenBudget budget_;  ///< batch_tokens / batch_tokens_window; off by default
  double max_dropped_fraction_;
  loom::Logger logger_;
  std::vector<SquadExample> examples_;
  std::vector<SquadFeature> features_;
  uint64_t skipped_ = 0;  // training questions whose answer text is not in the context
};

}  // namespace loom_datasets
