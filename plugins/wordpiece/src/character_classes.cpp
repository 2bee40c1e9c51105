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

// DerivedCoreProperties: Other_Lowercase and Other_Uppercase (letters utf8proc's categories miss).
constexpr Range kOtherCased[] = {
    {0x00AA, 0x00AA},   {0x00BA, 0x00BA},  {0x02B0, 0x02B8},   {0x02C0, 0x02C1},   {0x02E0, 0x02E4},
    {0x0345, 0x0345},   {0x037A, 0x037A},  {0x10FC, 0x10FC},   {0x1D2C, 0x1D6A},   {0x1D78, 0x1D78},
    {0x1D9B, 0x1DBF},   {0x2071, 0x2071},  {0x207F, 0x207F},   {0x2090, 0x209C},   {0x2160, 0x217F},
    {0x24B6, 0x24E9},   {0x2C7C, 0x2C7D},  {0xA69C, 0xA69D},   {0xA770, 0xA770},   {0xA7F8, 0xA7F9},
    {0xAB5C, 0xAB5F},   {0xAB69, 0xAB69},  {0x10780, 0x107BA}, {0x1E030, 0x1E06D}, {0x1F130, 0x1F149},
    {0x1F150, 0x1F169}, {0x1F170, 0x1F189}};

// Word_Break MidLetter, MidNumLet and Single_Quote: the non-category part of Case_Ignorable.
constexpr char32_t kWordBreakIgnorable[] = {0x0027, 0x002E, 0x003A, 0x00B7, 0x0387, 0x055F,
                                            0x05F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
                                            0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};

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

bool is_cased(char32_t c) {
  const utf8proc_category_t cat = category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) return true;
  return in_ranges(c, kOtherCased, sizeof(kOtherCased) / sizeof(kOtherCased[0]));
}

bool is_case_ignorable(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  for (char32_t x : kWordBreakIgnorable)
    if (c == x) return true;
  return false;
}

}  // namespace loom::wordpiece
