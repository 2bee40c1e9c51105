// Greedy longest-match-first WordPiece over one piece, exactly as transformers'
// WordpieceTokenizer: a piece longer than max_input_chars_per_word code points is [UNK]; else, from
// the left, take the longest vocabulary entry (a "##" continuation after the first), and if some
// position has no match the whole piece is a single [UNK].
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "vocabulary.hpp"

namespace loom::wordpiece {

class WordpieceMatcher {
 public:
  WordpieceMatcher(const Vocabulary& vocabulary, int32_t unk_id, size_t max_input_chars_per_word)
      : vocabulary_(vocabulary), unk_id_(unk_id), max_chars_(max_input_chars_per_word) {}

  /// Appends the ids of `piece` (UTF-8, `code_points` long) to `out`.
  void match(std::string_view piece, size_t code_points, std::vector<int32_t>& out) const;

 private:
  const Vocabulary& vocabulary_;
  int32_t unk_id_;
  size_t max_chars_;
};

}  // namespace loom::wordpiece
