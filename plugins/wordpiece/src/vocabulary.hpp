// A WordPiece vocabulary: one token per line, id = line number (0-based), as BERT's vocab.txt.
//
// Loading follows transformers' load_vocab: the line ending is removed (a trailing "\r" too, so a
// CRLF file works), every line is an entry (an empty line is the empty token), and when a token
// appears twice the later id wins the token→id lookup. Word-initial tokens and "##" continuations
// live in two open-addressing tables keyed by their text without the "##", so greedy matching
// never builds strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::wordpiece {

class Vocabulary {
 public:
  /// Reads `path`; throws loom::IoError naming the file when it cannot be read or is empty.
  static Vocabulary load(const std::string& path);
  /// Builds from tokens in id order (tests, trainers).
  static Vocabulary from_tokens(std::vector<std::string> tokens);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  /// Token text of `id`, NUL-terminated; nullptr when out of range.
  const char* token(int32_t id) const;
  /// Id of the exact token text; -1 when absent.
  int32_t find(std::string_view token) const;
  /// Id of a word-initial token spelled `piece`; -1 when absent.
  int32_t find_initial(std::string_view piece) const { return initial_.find(piece, tokens_); }
  /// Id of the continuation "##" + `piece`; -1 when absent.
  int32_t find_continuation(std::string_view piece) const { return continuation_.find(piece, tokens_); }
  /// Longest word-initial / continuation piece in bytes (bounds the greedy search).
  size_t longest_initial() const { return initial_.longest; }
  size_t longest_continuation() const { return continuation_.longest; }
  bool is_continuation(int32_t id) const;

 private:
  // Keys are views into tokens_ (offset by 2 for continuations); slots hold id + 1 (0 = empty).
  struct Table {
    std::vector<int32_t> slots;
    std::vector<uint64_t> hashes;
    size_t longest = 0;
    bool continuation = false;
    void build(const std::vector<std::string>& tokens, bool continuations);
    int32_t find(std::string_view key, const std::vector<std::string>& tokens) const;
    std::string_view key_of(int32_t id, const std::vector<std::string>& tokens) const;
  };

  std::vector<std::string> tokens_;
  Table initial_;
  Table continuation_;
};

/// 64-bit FNV-1a; short keys, good enough spread for a power-of-two table.
inline uint64_t hash_piece(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

}  // namespace loom::wordpiece
