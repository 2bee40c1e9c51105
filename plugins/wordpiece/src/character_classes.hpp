// The character classes of Hugging Face's BasicTokenizer (transformers tokenization_bert.py),
// over utf8proc's Unicode tables:
// - control (removed by clean-up): general category C* except \t \n \r;
// - whitespace (becomes a space): ' ' \t \n \r and category Zs; words also end at U+2028/U+2029,
//   which Python's str.split() treats as whitespace although they are not Zs;
// - punctuation (split into its own word): ASCII 33-47, 58-64, 91-96, 123-126, and category P*;
// - CJK ideograph (split into its own word): the eight blocks BERT lists;
// ASCII is answered from a table (the hot path); everything else asks utf8proc.
#pragma once

#include <cstdint>

namespace loom::wordpiece {

/// What the basic tokenizer does with a code point before normalisation.
enum class CharacterClass : uint8_t {
  word,        ///< part of a word
  removed,     ///< NUL, U+FFFD, control/format/unassigned/private-use/surrogate: dropped
  whitespace,  ///< ends the current word
  cjk,         ///< a CJK ideograph: a word of its own
};

/// Class of `c` in the clean-up / CJK step.
CharacterClass classify(char32_t c);
/// BERT's punctuation test (applied to normalised text).
bool is_punctuation(char32_t c);
/// Unicode general category Mn (what accent stripping drops after NFD).
bool is_nonspacing_mark(char32_t c);

/// Class table for ASCII; bit 0..1 = CharacterClass, bit 2 = punctuation.
struct AsciiClasses {
  uint8_t entry[128];
  constexpr AsciiClasses() : entry() {
    for (int c = 0; c < 128; ++c) {
      uint8_t cls = static_cast<uint8_t>(CharacterClass::word);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        cls = static_cast<uint8_t>(CharacterClass::whitespace);
      else if (c < 32 || c == 127)
        cls = static_cast<uint8_t>(CharacterClass::removed);
      const bool punctuation =
          (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
      entry[c] = static_cast<uint8_t>(cls | (punctuation ? 4 : 0));
    }
  }
};
inline constexpr AsciiClasses kAscii{};

}  // namespace loom::wordpiece
