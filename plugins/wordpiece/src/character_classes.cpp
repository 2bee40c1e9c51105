// Character classes over utf8proc; see character_classes.hpp for the rules and their source.
#include "character_classes.hpp"

#include <utf8proc.h>

namespace loom::wordpiece {
namespace {

struct Range {
  char32_t first;
  char32_t last;
};

bool in_ranges(char32_t c, const Range* ranges, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (c >= ranges[i].first && c <= ranges[i].last) return true;
  return false;
}

// The blocks BERT's _is_chinese_char lists (CJK Unified Ideographs and extensions A-E, and the
// two compatibility blocks). Hangul, kana and CJK punctuation are deliberately not in it.
constexpr Range kCjk[] = {{0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
                          {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0xF900, 0xFAFF},   {0x2F800, 0x2FA1F}};

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

CharacterClass classify(char32_t c) {
  if (c < 128) return static_cast<CharacterClass>(kAscii.entry[c] & 3);
  if (c == 0xFFFD) return CharacterClass::removed;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return CharacterClass::removed;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:  // not whitespace to _is_whitespace, but str.split() splits there
    case UTF8PROC_CATEGORY_ZP:
      return CharacterClass::whitespace;
    default:
      break;
  }
  if (in_ranges(c, kCjk, sizeof(kCjk) / sizeof(kCjk[0]))) return CharacterClass::cjk;
  return CharacterClass::word;
}

bool is_punctuation(char32_t c) {
  if (c < 128) return (kAscii.entry[c] & 4) != 0;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_nonspacing_mark(char32_t c) {
  return c >= 0x300 && category(c) == UTF8PROC_CATEGORY_MN;
}

}  // namespace loom::wordpiece
