// Greedy WordPiece; see wordpiece_matcher.hpp for the contract.
#include "wordpiece_matcher.hpp"

#include <algorithm>

namespace loom::wordpiece {
namespace {

bool is_utf8_continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

void WordpieceMatcher::match(std::string_view piece, size_t code_points, std::vector<int32_t>& out) const {
  if (code_points > max_chars_) {
    out.push_back(unk_id_);
    return;
  }
  const size_t first = out.size();
  size_t start = 0;
  while (start < piece.size()) {
    const bool continuation = start > 0;
    const size_t longest = continuation ? vocabulary_.longest_continuation() : vocabulary_.longest_initial();
    size_t end = std::min(piece.size(), start + longest);
    while (end < piece.size() && is_utf8_continuation_byte(piece[end])) --end;  // a code point boundary
    int32_t id = -1;
    while (end > start) {
      const std::string_view candidate = piece.substr(start, end - start);
      id = continuation ? vocabulary_.find_continuation(candidate) : vocabulary_.find_initial(candidate);
      if (id >= 0) break;
      do --end;
      while (end > start && is_utf8_continuation_byte(piece[end]));
    }
    if (id < 0) {
      out.resize(first);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(id);
    start = end;
  }
}

}  // namespace loom::wordpiece
