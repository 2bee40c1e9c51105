// See utf8.hpp.
#include "utf8.hpp"

#include <algorithm>

namespace loom::bpe {

size_t RepairedUtf8::input_offset(size_t offset) const {
  // The last resume point at or before `offset`; before the first one offsets are unchanged.
  auto after = std::upper_bound(resumes.begin(), resumes.end(), offset,
                                [](size_t value, const std::pair<size_t, size_t>& r) { return value < r.first; });
  if (after == resumes.begin()) return offset;
  --after;
  return after->second + (offset - after->first);
}

RepairedUtf8 repair_utf8(const char* text, size_t length) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text);
  RepairedUtf8 result;
  size_t position = 0;
  // Fast scan: stop at the first ill-formed sequence.
  while (position < length) {
    if (bytes[position] < 0x80) {
      ++position;
      continue;
    }
    const size_t start = position;
    bool ill_formed = false;
    decode_utf8(bytes, length, &position, &ill_formed);
    if (ill_formed) {
      position = start;
      break;
    }
  }
  if (position == length) return result;
  result.text.assign(text, position);
  while (position < length) {
    const size_t start = position;
    bool ill_formed = false;
    const char32_t c = decode_utf8(bytes, length, &position, &ill_formed);
    if (ill_formed) {
      ++result.replaced;
      append_utf8(result.text, c);
      result.resumes.emplace_back(result.text.size(), position);
    } else {
      result.text.append(text + start, position - start);
    }
  }
  return result;
}

}  // namespace loom::bpe
