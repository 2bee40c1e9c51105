// Byte-level BPE training (`loom vocab train --kind bpe`), as Hugging Face `tokenizers`' BpeTrainer
// learns (tokenizers/src/models/bpe/trainer.rs), merge for merge:
//   ids: the special tokens first, then the alphabet — every character of the counted words plus
//   the initial alphabet (GPT-2's 256 byte characters for --kind bpe) — in code-point order, then
//   one token per merge;
//   merges: repeatedly the pair of adjacent symbols with the highest count over all words (a word
//   counting as often as it occurs), ties going to the pair of lower ids (left id, then right), its
//   occurrences merged left to right in every word that had it when the pair was last counted;
//   until the vocabulary holds `vocab_size` entries, no pair is left, or the best count is below
//   `min_frequency`.
// Words are what tokenizer/bpe's pre_tokenize gives (spelled in the byte-level alphabet), counted
// with count_words (wordpiece_trainer.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "prep/wordpiece_trainer.hpp"

namespace loom::host {

struct BpeTrainingOptions {
  size_t vocab_size = 30000;
  uint64_t min_frequency = 0;
  std::vector<std::string> special_tokens;    ///< ids 0, 1, ... in this order
  std::vector<std::string> initial_alphabet;  ///< characters always in the alphabet
};

struct BpeTrainingResult {
  std::vector<std::string> vocabulary;  ///< token by id
  std::vector<std::pair<std::string, std::string>> merges;  ///< in rank order
  size_t alphabet = 0;  ///< single-character entries
};

/// Learns a BPE model from word counts.
BpeTrainingResult learn_bpe(const WordCounts& counts, const BpeTrainingOptions& options);

/// GPT-2's byte-level alphabet: the 256 characters standing for the bytes 0..255, in byte order.
std::vector<std::string> byte_level_alphabet();

}  // namespace loom::host
