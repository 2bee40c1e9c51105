// See character_classes.hpp.
#include "character_classes.hpp"

#include <utf8proc.h>

#include <array>

namespace loom::bpe {
namespace {

CharacterClass class_from_category(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CharacterClass::letter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharacterClass::number;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return CharacterClass::space;
    default:
      return (c >= 0x09 && c <= 0x0D) || c == 0x85 ? CharacterClass::space : CharacterClass::other;
  }
}

std::array<CharacterClass, 128> ascii_classes() {
  std::array<CharacterClass, 128> table{};
  for (char32_t c = 0; c < 128; ++c) table[c] = class_from_category(c);
  return table;
}

}  // namespace

CharacterClass character_class(char32_t c) {
  static const std::array<CharacterClass, 128> ascii = ascii_classes();
  return c < 128 ? ascii[c] : class_from_category(c);
}

bool is_white_space(char32_t c) {
  // The White_Space property: utf8proc has no property table for it, so the 25 code points.
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_word_character(char32_t c) {
  // Alphabetic is L* and Nl plus the Other_Alphabetic marks, which utf8proc has no table for; those
  // marks (vowel signs of Indic scripts, ...) count as non-word here.
  const CharacterClass k = character_class(c);
  return c == '_' || k == CharacterClass::letter || k == CharacterClass::number;
}

}  // namespace loom::bpe
