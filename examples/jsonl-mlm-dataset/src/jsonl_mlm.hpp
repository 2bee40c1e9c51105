// dataset/jsonl-mlm: masked-language-model pre-training straight from JSON-lines text, tokenised
// on the fly through the run's [tokenizer] component (no `loom prep` step, no HDF5 shards).
//
// Each non-blank line of `file` is a JSON object whose `text_key` member (default "text") is one
// instance: [CLS] tokens [SEP], truncated to max_seq_length. `open()` reads and checks every line
// (a bad one is an error naming file:line) but keeps the text; each batch tokenises its rows when
// it is built. Masking is BERT's 80/10/10 rule with probability masked_lm_prob per real token, at
// most max_predictions per row, drawn from Philox keyed by (seed, epoch, instance): a resumed run
// masks exactly like the uninterrupted one. There is no next-sentence task: next_sentence_labels
// are -1 (ignored by the loss).
#pragma once

#include <string>
#include <vector>

#include "loom/sdk/dataset.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace loom_jsonl {

class JsonlMlmDataset final : public loom::Dataset {
 public:
  explicit JsonlMlmDataset(loom::ComponentContext& context);

  void open(const loom::DatasetSetup& setup) override;
  loom::BatchLimits limits() const override;
  uint64_t size() const override { return texts_.size(); }
  uint64_t rank_size() const override;
  loom::DatasetCursor cursor() const override { return cursor_; }
  void seek(const loom::DatasetCursor& cursor) override;
  loom::BatchShape next_batch(const loom::BatchBuffers& out) override;
  const char* label_name(int32_t) const override { return nullptr; }
  size_t describe_instance(uint64_t id, char* json, size_t capacity) const override;

 private:
  struct Text {
    std::string text;
    uint64_t line;  // 1-based line number in `file_`
  };
  void require_open(const char* what) const;
  // Instance ids this rank visits in `epoch`, in order.
  std::vector<uint64_t> epoch_order(uint64_t epoch) const;
  // Encodes and masks instance `id` into row `row` of `out` (row stride `seq`); returns its length.
  int32_t encode_row(uint64_t id, uint64_t epoch, std::vector<int32_t>& ids, std::vector<int32_t>& labels) const;

  std::string file_, text_key_;
  int32_t max_seq_length_, batch_size_, max_predictions_;
  double masked_lm_prob_;
  bool shuffle_, drop_last_;

  const loom::Tokenizer* tokenizer_ = nullptr;
  loom::SpecialTokenIds special_{};
  int32_t rank_ = 0, world_size_ = 1;
  uint64_t seed_ = 0;
  std::vector<Text> texts_;
  loom::DatasetCursor cursor_{0, 0};
  std::vector<uint64_t> order_;  // this rank's order for order_epoch_
  uint64_t order_epoch_ = UINT64_MAX;
  bool open_ = false;
};

}  // namespace loom_jsonl
