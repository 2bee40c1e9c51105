// Test helpers: the real bert-base-uncased vocabulary (committed copy of scripts/fetch-data's
// output) and a tokenizer over it, plus token-string views of results for readable assertions.
#pragma once

#include <string>
#include <vector>

#include "vocabulary.hpp"
#include "wordpiece_tokenizer.hpp"

namespace loom::wordpiece::testing {

inline std::string uncased_vocab_path() {
  return std::string(WORDPIECE_TEST_DATA) + "/bert-base-uncased-vocab.txt";
}

inline const Vocabulary& uncased_vocabulary() {
  static const Vocabulary vocabulary = Vocabulary::load(uncased_vocab_path());
  return vocabulary;
}

inline WordpieceTokenizer make_tokenizer(const Vocabulary& vocabulary, bool lower_case = true,
                                         bool split_special_tokens = false) {
  WordpieceSettings settings;
  settings.basic.lower_case = lower_case;
  settings.basic.strip_accents = lower_case;
  settings.basic.split_special_tokens = split_special_tokens;
  return WordpieceTokenizer(settings, vocabulary);
}

inline const WordpieceTokenizer& uncased() {
  static const WordpieceTokenizer tokenizer = make_tokenizer(uncased_vocabulary());
  return tokenizer;
}

/// The token strings `tokenizer` produces for `text`.
inline std::vector<std::string> tokens_of(const WordpieceTokenizer& tokenizer, const std::string& text) {
  std::vector<std::string> out;
  for (int32_t id : tokenizer.tokenize_to_vector(text.data(), text.size()))
    out.push_back(tokenizer.id_to_token(id));
  return out;
}

inline std::vector<std::string> tokens_of(const std::string& text) {
  return tokens_of(uncased(), text);
}

/// The pre-tokenized words (space-joined) of `text`.
inline std::string words_of(const WordpieceTokenizer& tokenizer, const std::string& text) {
  std::string words(tokenizer.pre_tokenize(text.data(), text.size(), nullptr, 0), '\0');
  tokenizer.pre_tokenize(text.data(), text.size(), words.data(), words.size());
  return words;
}

using Tokens = std::vector<std::string>;

}  // namespace loom::wordpiece::testing
