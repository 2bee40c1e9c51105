// Hugging Face BertTokenizer's text → words step (PreTrainedTokenizer's special-token split, then
// BasicTokenizer.tokenize), in one pass over UTF-8:
//   1. special tokens ([CLS], [SEP], ...) found verbatim anywhere in the text are emitted as
//      themselves and split the text (unless split_special_tokens);
//   2. clean-up: invalid UTF-8 → U+FFFD; U+0000, U+FFFD and control characters removed (without
//      ending the word), whitespace ends the word;
//   3. every CJK ideograph is a word of its own;
//   4. each word is normalised (word_normalizer.hpp) and split at punctuation, each punctuation
//      character becoming its own piece.
// Pieces go to a sink as UTF-8; WordPiece (wordpiece_matcher.hpp) consumes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "word_normalizer.hpp"

namespace loom::wordpiece {

/// Receives the pieces of a text in order.
class PieceSink {
 public:
  virtual ~PieceSink() = default;
  /// A normalised piece: UTF-8 bytes and its length in code points.
  virtual void piece(std::string_view utf8, size_t code_points) = 0;
  /// A special token found in the text.
  virtual void special(std::string_view token, int32_t id) = 0;
};

struct SpecialToken {
  std::string text;
  int32_t id;
};

struct BasicTokenizerOptions {
  bool lower_case = true;
  bool strip_accents = true;
  bool tokenize_chinese_chars = true;
  bool split_special_tokens = false;
};

class BasicTokenizer {
 public:
  BasicTokenizer(const BasicTokenizerOptions& options, std::vector<SpecialToken> specials);

  /// Splits `text` into pieces for `sink`; adds the number of invalid UTF-8 sequences replaced to
  /// `*replacements`.
  void run(const char* text, size_t length, PieceSink& sink, uint64_t* replacements) const;

  /// Per-call state (defined in the .cpp).
  struct Scratch;

 private:
  void flush_word(Scratch& scratch, PieceSink& sink) const;
  void emit_ascii_word(Scratch& scratch, PieceSink& sink) const;
  void emit_unicode_word(Scratch& scratch, PieceSink& sink) const;
  const SpecialToken* special_at(const char* text, size_t length, size_t position) const;

  BasicTokenizerOptions options_;
  WordNormalizer normalizer_;
  std::vector<SpecialToken> specials_;
};

}  // namespace loom::wordpiece
