// See token_offsets_conversion.hpp.
#include "token_offsets_conversion.hpp"

#include <algorithm>

#include "utf8.hpp"

namespace loom::bpe {

std::vector<loom::TokenOffset> sequence_offsets(std::string_view text, const std::vector<SequenceToken>& tokens,
                                                const TrimSettings& trim, loom::OffsetUnit unit) {
  // code_point_at[b]: code points before byte b (b on a character boundary, or the end);
  // byte_of[c]: the byte where code point c starts (c up to the count, which maps to the end).
  std::vector<uint32_t> code_point_at(text.size() + 1, 0), byte_of;
  byte_of.reserve(text.size() + 1);
  uint32_t count = 0;
  for (size_t b = 0; b < text.size(); ++b) {
    code_point_at[b] = count;
    if (!is_continuation_byte(static_cast<unsigned char>(text[b]))) {
      byte_of.push_back(static_cast<uint32_t>(b));
      ++count;
    }
  }
  code_point_at[text.size()] = count;
  byte_of.push_back(static_cast<uint32_t>(text.size()));

  std::vector<loom::TokenOffset> out(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const SequenceToken& t = tokens[i];
    uint32_t begin = code_point_at[t.begin], end = code_point_at[t.end];
    if (trim.trim) {
      uint32_t leading = t.leading_spaces;
      if (leading > 0) {
        const bool first = i == 0 || begin == 0;
        if (first && trim.keeps_prefix_space && leading == 1) leading = 0;
        begin = std::min(begin + leading, end);
      }
      if (t.trailing_spaces > 0 && end >= t.trailing_spaces) end = std::max(end - t.trailing_spaces, begin);
    }
    out[i] = unit == loom::OffsetUnit::bytes ? loom::TokenOffset{byte_of[begin], byte_of[end]}
                                             : loom::TokenOffset{begin, end};
  }
  return out;
}

}  // namespace loom::bpe
