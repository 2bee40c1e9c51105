// The BPE model of Hugging Face `tokenizers` over GPT-2's byte-level alphabet: a word (the bytes
// of one pre-tokenized piece) starts as one symbol per byte and merges pairs in merge-rank order,
// lowest rank first and leftmost first among equals, exactly as `tokenizers`' Word::merge_all
// does (a priority queue of (rank, position) whose stale entries are recognised by the merged id).
//
// Model options honoured as Hugging Face defines them: unk_token (and fuse_unk) for a byte whose
// character the vocabulary lacks, byte_fallback (<0xXX> tokens for such a character's UTF-8
// bytes), continuing_subword_prefix (on every symbol but a word's first), end_of_word_suffix (on
// a word's last symbol) and ignore_merges (a word that is a vocabulary entry is that entry).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "merge_table.hpp"

namespace loom::bpe {

struct BpeModelOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

/// A token of a word: its id and the bytes [begin, end) of the word it covers.
struct WordPiece {
  int32_t id;
  uint32_t begin;
  uint32_t end;
};

/// Hash of strings that also looks up string_views.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  /// `vocabulary`: spelling → id; `merges`: pairs of spellings in rank order. `source` names the
  /// file(s) in errors. Throws loom::ConfigError for a merge whose tokens the vocabulary lacks.
  BpeModel(TokenIds vocabulary, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeModelOptions options, const std::string& source);
  ~BpeModel();

  /// Appends the tokens of `word` (raw bytes, not empty) to `out`.
  void tokenize_word(std::string_view word, std::vector<WordPiece>& out) const;

  const TokenIds& vocabulary() const { return vocabulary_; }
  const BpeModelOptions& options() const { return options_; }
  size_t merge_count() const { return merges_.size(); }

 private:
  void merge_word(std::string_view word, std::vector<WordPiece>& out) const;

  TokenIds vocabulary_;
  BpeModelOptions options_;
  MergeTable merges_;
  // Id of each byte's character as a word's first, middle, last or only symbol (prefix and
  // suffix applied as Hugging Face does); -1 when the vocabulary lacks it.
  int32_t first_[256], middle_[256], last_[256], only_[256];
  int32_t unk_id_ = -1;
  TokenIds raw_vocabulary_;  // raw bytes → id, for ignore_merges
  uint64_t instance_;        // names this model in the per-thread word caches
};

}  // namespace loom::bpe
