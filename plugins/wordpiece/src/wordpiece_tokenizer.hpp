// tokenizer/wordpiece: Hugging Face BertTokenizer semantics behind loom::Tokenizer.
//
// Options (recipe table [tokenizer], or `loom tokenize` flags):
//   vocab                     path of vocab.txt (required; relative paths resolve against the
//                             current directory, since the host passes option text only)
//   cased                     false (default): lower-case and strip accents; true: keep case
//   strip_accents             default: not cased (transformers' strip_accents=None)
//   tokenize_chinese_chars    true: every CJK ideograph is its own word
//   split_special_tokens      false: "[SEP]" etc. in the text are the special tokens
//   max_input_chars_per_word  100: longer pieces become [UNK]
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "basic_tokenizer.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "loom/sdk/vocabulary_file.hpp"
#include "vocabulary.hpp"
#include "wordpiece_matcher.hpp"

namespace loom::wordpiece {

struct WordpieceSettings {
  std::string vocab_path;
  BasicTokenizerOptions basic;
  size_t max_input_chars_per_word = 100;
};

class WordpieceTokenizer final : public loom::Tokenizer, public loom::VocabularyFile {
 public:
  /// Reads every option; under a dry run checks the vocabulary file exists but does not load it.
  explicit WordpieceTokenizer(loom::ComponentContext& context);
  /// Builds from settings and a loaded vocabulary (tests, tools). Throws ConfigError without [UNK].
  WordpieceTokenizer(const WordpieceSettings& settings, Vocabulary vocabulary);

  int32_t vocab_size() const override { return vocabulary_.size(); }
  const char* id_to_token(int32_t id) const override { return vocabulary_.token(id); }
  int32_t token_to_id(const char* token, size_t length) const override;
  SpecialTokenIds special_token_ids() const override { return specials_; }
  bool is_continuation(int32_t id) const override { return vocabulary_.is_continuation(id); }
  bool lower_case() const override { return settings_.basic.lower_case; }

  size_t tokenize(const char* text, size_t length, int32_t* ids, size_t capacity) const override;
  size_t pre_tokenize(const char* text, size_t length, char* words, size_t capacity) const override;
  size_t encode(const char* a, size_t a_length, const char* b, size_t b_length, const EncodeOptions& options,
                const EncodedBuffers& out) const override;
  size_t encode_ids(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                    const EncodeOptions& options, const EncodedBuffers& out) const override;
  size_t decode(const int32_t* ids, size_t count, const DecodeOptions& options, char* text,
                size_t capacity) const override;
  uint64_t invalid_utf8_replacements() const override { return replacements_.load(); }

  /// VocabularyFile: the `vocab` option and its SHA-256 ("" when built from a Vocabulary in memory).
  const char* vocabulary_path() const override { return settings_.vocab_path.c_str(); }
  const char* vocabulary_sha256() const override { return vocabulary_sha256_.c_str(); }

  /// Tokenizes into a vector (the plugin's own convenience for encode).
  std::vector<int32_t> tokenize_to_vector(const char* text, size_t length) const;

 private:
  void initialise();

  WordpieceSettings settings_;
  Vocabulary vocabulary_;
  SpecialTokenIds specials_{-1, -1, -1, -1, -1};
  std::unique_ptr<BasicTokenizer> basic_;
  std::unique_ptr<WordpieceMatcher> matcher_;
  mutable std::atomic<uint64_t> replacements_{0};
  std::string vocabulary_sha256_;
};

}  // namespace loom::wordpiece
