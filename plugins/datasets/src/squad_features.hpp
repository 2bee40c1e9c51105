// SQuAD v1.1 / v2.0 → span-extraction features, as DLE's run_squad.py (read_squad_examples,
// convert_examples_to_features; docs/reference.md §7.1):
// - context split on whitespace (space, \t, \r, \n, U+202F) into words with a character → word
//   map; answer_start counts Unicode code points; a training answer whose text is not found in
//   the span of words it maps to is skipped (counted);
// - each word is tokenized on its own (token ↔ word maps); the question is truncated to
//   max_query_length tokens; the answer span is refined by _improve_answer_span;
// - sliding windows of max_seq_length − len(query) − 3 tokens advancing by min(length, doc_stride);
//   each window is [CLS] query [SEP] span [SEP], segments 0/1; a window not containing the
//   answer, or an impossible (v2.0 is_impossible) question, gets start = end = 0 ([CLS]);
// - "max context" of a token = the window maximising min(left, right) + 0.01·length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/sdk/tokenizer.hpp"

namespace loom_datasets {

struct SquadExample {
  std::string qas_id;
  std::string question;
  std::vector<std::string> doc_words;
  std::vector<std::string> answers;  ///< all given answer texts (evaluation)
  bool is_impossible = false;
  std::string answer_text;  ///< training answer (the first one)
  int32_t start_word = -1;  ///< training answer's first/last word; -1 when impossible
  int32_t end_word = -1;
};

struct SquadFeature {
  uint32_t example = 0;
  uint32_t span_index = 0;
  std::vector<int32_t> ids;
  std::vector<int32_t> types;
  std::vector<int32_t> token_to_word;  ///< per token: word index in the context, -1 outside it
  std::vector<uint8_t> max_context;    ///< per token: 1 when this window is its max-context window
  int32_t start = 0;
  int32_t end = 0;
};

struct SquadOptions {
  int32_t max_seq_length = 384;
  int32_t doc_stride = 128;
  int32_t max_query_length = 64;
  bool training = true;  ///< map answers to positions (false: evaluation features, positions 0)
};

/// Parses a SQuAD JSON file. `skipped` counts training answers not found in the context.
std::vector<SquadExample> read_squad_examples(const std::string& path, bool training, uint64_t& skipped);

/// The features of every example, in example order.
std::vector<SquadFeature> squad_features(const std::vector<SquadExample>& examples,
                                         const SquadOptions& options, const loom::Tokenizer& tokenizer);

}  // namespace loom_datasets
