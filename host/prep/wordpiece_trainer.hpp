// WordPiece vocabulary training (`loom vocab train`; algorithm and reasons in
// docs/decisions/wordpiece-vocab-training.md).
//
// Words come from the tokenizer's own pre-tokenization (loom::Tokenizer::pre_tokenize of a
// tokenizer/wordpiece built with only the special tokens), so training and tokenizing split text
// identically. Learning is Hugging Face tokenizers' WordPiece trainer: byte-pair-style merges over
// word counts where a symbol after the first in a word carries "##". The vocabulary is
//   [PAD] [unused0..98] [UNK] [CLS] [SEP] [MASK]        ids 0, 1-99, 100, 101, 102, 103 (BERT's layout)
//   the alphabet: every character seen word-initially, then every "##c" seen inside words
//   merged pieces, in the order learned, until `size` entries or no pair occurs min_frequency times
// Because every character of the corpus is in the alphabet in the position it occurs, greedy
// WordPiece over the result never produces [UNK] on the training text (pieces over
// max_input_chars_per_word aside, which are [UNK] by rule).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/sdk/tokenizer.hpp"

namespace loom::host {

/// The special tokens at the head of every trained vocabulary (104 entries, BERT's layout).
std::vector<std::string> bert_special_token_layout();

/// Word → occurrences.
using WordCounts = std::unordered_map<std::string, uint64_t>;

struct WordpieceTrainingStats {
  uint64_t words = 0;  ///< word occurrences counted
  size_t unique_words = 0;
  size_t alphabet = 0;    ///< single-character entries ("c" and "##c")
  size_t merges = 0;      ///< merge steps taken
  size_t vocabulary = 0;  ///< entries written
};

/// Adds the words of `text` (per `tokenizer.pre_tokenize`) to `counts`, skipping special tokens.
void count_words(const loom::Tokenizer& tokenizer, const std::string& text, WordCounts& counts,
                 std::string& scratch);

/// Learns the vocabulary from word counts. Throws std::runtime_error when `size` cannot hold the
/// special tokens plus the alphabet. Deterministic: ties go to the pair of older symbols.
std::vector<std::string> learn_wordpiece_vocabulary(const WordCounts& counts, size_t size,
                                                    uint64_t min_frequency, WordpieceTrainingStats* stats);

}  // namespace loom::host
