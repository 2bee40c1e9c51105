// UTF-8 → code points, never failing: each maximal ill-formed subsequence (Unicode §3.9, "best
// practice for U+FFFD substitution", which Python's errors="replace" follows) becomes one U+FFFD
// and is counted. Overlong forms, surrogates and values above U+10FFFF are ill-formed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::wordpiece {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

/// Decodes the code point at `text[*position]`, advancing `*position`; ill-formed input yields
/// U+FFFD and increments `*replacements`. Requires *position < length.
inline char32_t decode_utf8(const unsigned char* text, size_t length, size_t* position,
                            uint64_t* replacements) {
  const size_t start = *position;
  const unsigned char lead = text[start];
  if (lead < 0x80) {
    *position = start + 1;
    return lead;
  }
  size_t needed;
  char32_t value;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the first continuation byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    needed = 1, value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    needed = 2, value = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // no overlongs
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    needed = 3, value = lead & 0x07;
    if (lead == 0xF0) low = 0x90;   // no overlongs
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    *position = start + 1;  // a continuation byte or C0, C1, F5..FF: never starts a sequence
    ++*replacements;
    return kReplacementCharacter;
  }
  size_t next = start + 1;
  for (size_t i = 0; i < needed; ++i, ++next) {
    const unsigned char byte = next < length ? text[next] : 0;
    const bool in_range =
        next < length && (i == 0 ? (byte >= low && byte <= high) : (byte >= 0x80 && byte <= 0xBF));
    if (!in_range) {  // the valid prefix [start, next) is one maximal subpart
      *position = next;
      ++*replacements;
      return kReplacementCharacter;
    }
    value = (value << 6) | (byte & 0x3F);
  }
  *position = next;
  return value;
}

/// Appends the UTF-8 encoding of a valid code point.
inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace loom::wordpiece
