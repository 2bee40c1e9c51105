// See added_tokens.hpp.
#include "added_tokens.hpp"

#include <algorithm>

#include "character_classes.hpp"
#include "utf8.hpp"

namespace loom::bpe {
namespace {

// The character ending at `end` (> 0) in valid UTF-8 `text`.
char32_t character_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && is_continuation_byte(static_cast<unsigned char>(text[start]))) --start;
  return decode_valid_utf8(reinterpret_cast<const unsigned char*>(text.data()), &start);
}

char32_t character_at(std::string_view text, size_t position) {
  return decode_valid_utf8(reinterpret_cast<const unsigned char*>(text.data()), &position);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) {
  for (auto& t : tokens)
    if (!t.content.empty()) tokens_.push_back(std::move(t));
  for (size_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(static_cast<int32_t>(i));
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return tokens_[static_cast<size_t>(a)].content.size() > tokens_[static_cast<size_t>(b)].content.size();
    });
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSplit>& out) const {
  const auto emit = [&](int32_t token, size_t begin, size_t end) {
    if (end > begin) out.push_back(TextSplit{token, static_cast<uint32_t>(begin), static_cast<uint32_t>(end)});
  };
  size_t consumed = 0;  // end of the last match written (start_offset in tokenizers)
  size_t position = 0;  // where the search goes on
  while (position < text.size()) {
    // The leftmost position where a token matches, and the longest token there.
    int32_t found = -1;
    size_t start = position;
    for (; start < text.size() && found < 0; ++start) {
      for (int32_t index : by_first_byte_[static_cast<unsigned char>(text[start])]) {
        const std::string& content = tokens_[static_cast<size_t>(index)].content;
        if (text.compare(start, content.size(), content) == 0) {
          found = index;
          break;
        }
      }
      if (found >= 0) break;
    }
    if (found < 0) break;
    const AddedToken& token = tokens_[static_cast<size_t>(found)];
    size_t begin = start, stop = start + token.content.size();
    position = stop;
    if (token.single_word) {
      const bool free_before = begin == 0 || !is_word_character(character_before(text, begin));
      const bool free_after = stop == text.size() || !is_word_character(character_at(text, stop));
      if (!free_before || !free_after) continue;
    }
    if (token.lstrip) {
      size_t widened = begin;
      while (widened > 0 && is_white_space(character_before(text, widened))) {
        --widened;
        while (widened > 0 && is_continuation_byte(static_cast<unsigned char>(text[widened]))) --widened;
      }
      begin = std::max(widened, consumed);  // whitespace an earlier match took stays its
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t next = stop;
        const char32_t c = decode_valid_utf8(reinterpret_cast<const unsigned char*>(text.data()), &next);
        if (!is_white_space(c)) break;
        stop = next;
      }
    }
    emit(-1, consumed, begin);
    out.push_back(TextSplit{found, static_cast<uint32_t>(begin), static_cast<uint32_t>(stop)});
    consumed = stop;
  }
  emit(-1, consumed, text.size());
}

}  // namespace loom::bpe
