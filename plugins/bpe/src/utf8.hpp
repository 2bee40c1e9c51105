// UTF-8 helpers of tokenizer/bpe: decoding that never fails (each maximal ill-formed subsequence,
// Unicode §3.9, becomes one U+FFFD — the policy tokenizer/wordpiece follows), encoding, and the
// length of a character from its lead byte in text already known to be valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::bpe {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

/// Decodes the code point at `text[*position]`, advancing `*position`; ill-formed input yields
/// U+FFFD and sets `*ill_formed`. Requires *position < length.
inline char32_t decode_utf8(const unsigned char* text, size_t length, size_t* position, bool* ill_formed) {
  const size_t start = *position;
  const unsigned char lead = text[start];
  *ill_formed = false;
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
    *position = start + 1;  // a continuation byte or C0, C1, F5..FF never starts a sequence
    *ill_formed = true;
    return kReplacementCharacter;
  }
  size_t next = start + 1;
  for (size_t i = 0; i < needed; ++i, ++next) {
    const unsigned char byte = next < length ? text[next] : 0;
    const bool in_range =
        next < length && (i == 0 ? (byte >= low && byte <= high) : (byte >= 0x80 && byte <= 0xBF));
    if (!in_range) {  // the valid prefix [start, next) is one maximal subpart
      *position = next;
      *ill_formed = true;
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

/// Bytes of the character whose lead byte is `lead`, in valid UTF-8.
inline size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/// True for a UTF-8 continuation byte (10xxxxxx).
inline bool is_continuation_byte(unsigned char byte) { return (byte & 0xC0) == 0x80; }

/// Decodes one character of valid UTF-8 at `text[*position]`, advancing `*position`.
inline char32_t decode_valid_utf8(const unsigned char* text, size_t* position) {
  const unsigned char lead = text[*position];
  const size_t n = utf8_length(lead);
  char32_t value = n == 1 ? lead : n == 2 ? (lead & 0x1F) : n == 3 ? (lead & 0x0F) : (lead & 0x07);
  for (size_t i = 1; i < n; ++i) value = (value << 6) | (text[*position + i] & 0x3F);
  *position += n;
  return value;
}

/// Text with every ill-formed subsequence replaced by U+FFFD, and where the replacements moved it.
struct RepairedUtf8 {
  std::string text;       ///< empty when the input was valid (then nothing else is set)
  uint64_t replaced = 0;  ///< ill-formed subsequences replaced
  /// After each replacement: (offset in `text`, offset in the input) of the next byte.
  std::vector<std::pair<size_t, size_t>> resumes;

  /// The input offset of `text` offset `offset`, which lies on a character boundary.
  size_t input_offset(size_t offset) const;
};

/// Repairs `text[0, length)`; valid input (the common case) costs one pass and no copy.
RepairedUtf8 repair_utf8(const char* text, size_t length);

}  // namespace loom::bpe
