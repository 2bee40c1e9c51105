// dataset/text-classification: sequence (pair) classification batches from GLUE-style TSV or
// JSONL (text_examples.hpp), tokenized at open() with the run's tokenizer as
// [CLS] a [SEP] (b [SEP]), longest-first truncation from the end (GLUE's _truncate_seq_pair).
// `task` names a GLUE task and reads its own files (glue_tasks.hpp) with its labels in the
// reference's order; task "sts-b" is regression: num_labels = 1 and each row's label is its f32
// score's bits (dataset.hpp).
// Options (docs/recipes.md): file, format, layout, task, labels, max_seq_length, batch_size,
// batch_tokens, batch_tokens_window, shuffle, drop_last. Offers loom::DatasetLabels: a split
// handed the task's labels (the training split's, or a checkpoint's id2label) uses them as its
// classes and refuses any other label (split_labels.hpp).
#pragma once

#include <string>
#include <vector>

#include "batched_dataset.hpp"
#include "loom/sdk/dataset_labels.hpp"
#include "loom/sdk/plugin.hpp"
#include "split_labels.hpp"
#include "text_examples.hpp"

namespace loom_datasets {

/// Token ids of many sequences in one allocation.
struct EncodedSequences {
  std::vector<int32_t> ids;
  std::vector<int32_t> types;
  std::vector<size_t> offsets{0};  ///< sequence i is [offsets[i], offsets[i+1])
  void append(const int32_t* ids_begin, const int32_t* types_begin, size_t count);
  size_t length(size_t i) const { return offsets[i + 1] - offsets[i]; }
};

class TextClassification final : public BatchedDataset, public loom::DatasetLabels {
 public:
  explicit TextClassification(loom::ComponentContext& context);
  void use_labels(const char* const* names, size_t count, const char* source) override;
  void open(const loom::DatasetSetup& setup) override;
  const char* label_name(int32_t label) const override;
  size_t describe_instance(uint64_t id, char* json, size_t capacity) const override;

 protected:
  void load_row(uint64_t instance, uint64_t epoch, Row& row) override;

 private:
  std::string file_;
  std::string format_;
  std::string layout_;
  std::string task_;  ///< "" or a GLUE task name
  std::vector<std::string> configured_labels_;
  TaskLabels task_labels_;  ///< handed over by the host (use_labels); empty: this split's own map
  int32_t max_seq_length_;
  int32_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  TokenBudget budget_;  ///< batch_tokens / batch_tokens_window; off by default
  std::vector<std::string> labels_;
  EncodedSequences encoded_;
  std::vector<int32_t> label_index_;  ///< class index, or (regression) the target's f32 bits
  bool regression_ = false;
  std::vector<uint64_t> lines_;
};

}  // namespace loom_datasets
