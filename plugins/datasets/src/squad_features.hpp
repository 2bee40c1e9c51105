// SQuAD examples → span-extraction features, as DLE's run_squad.py convert_examples_to_features
// (docs/reference.md §7.1; reading the file: squad_reader.hpp):
// - each context word is tokenized on its own (token ↔ word maps); the question is truncated to
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
#include "squad_reader.hpp"

namespace loom_datasets {

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

/// The features of every example, in example order.
std::vector<SquadFeature> squad_features(const std::vector<SquadExample>& examples,
                                         const SquadOptions& options, const loom::Tokenizer& tokenizer);

}  // namespace loom_datasets
