// The official scripts' answer normalisation; see squad_normalize.hpp.
#include "eval/squad_normalize.hpp"

#include <utf8proc.h>

namespace loom::host {
namespace {

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// Python's re word character (str patterns): str.isalnum() or '_'. isalnum = a letter (L*) or a
// character with a numeric value, which over Unicode is exactly Nd, Nl and No (the CJK
// ideographs with numeric values are Lo already).
bool is_word_character(char32_t c) {
  if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  switch (category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// Case_Ignorable (DerivedCoreProperties): Mn, Me, Cf, Lm, Sk and the Word_Break classes
// MidLetter, MidNumLet and Single_Quote.
bool is_case_ignorable(char32_t c) {
  switch (c) {
    case 0x0027:
    case 0x002E:
    case 0x003A:
    case 0x00B7:
    case 0x0387:
    case 0x055F:
    case 0x05F4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xFE13:
    case 0xFE52:
    case 0xFE55:
    case 0xFF07:
    case 0xFF0E:
    case 0xFF1A:
      return true;
    default:
      break;
  }
  switch (category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      return false;
  }
}

// Cased (Lu, Ll, Lt, Other_Lowercase, Other_Uppercase) for the characters that are not
// case-ignorable (the Final_Sigma rule skips those first, so only these matter).
bool is_cased(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
      return true;
    default:
      break;
  }
  return c == 0x00AA || c == 0x00BA || (c >= 0x2160 && c <= 0x217F) || (c >= 0x24B6 && c <= 0x24E9) ||
         (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

// CPython's handle_capital_sigma: \p{cased}\p{case-ignorable}* Σ !(\p{case-ignorable}*\p{cased}).
bool is_final_sigma(const std::u32string& text, size_t i) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(text[j - 1])) --j;
  if (j == 0 || !is_cased(text[j - 1])) return false;
  size_t k = i + 1;
  while (k < text.size() && is_case_ignorable(text[k])) ++k;
  return k == text.size() || !is_cased(text[k]);
}

bool is_string_punctuation(char32_t c) {
  // string.punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

// re.sub(r'\b(a|an|the)\b', ' ', text): matches are found left to right in the original text,
// the alternatives tried in order (so "an" is found after "a" fails its closing \b).
std::u32string remove_articles(const std::u32string& text) {
  auto word_at = [&](size_t i) { return i < text.size() && is_word_character(text[i]); };
  auto boundary = [&](size_t i) { return (i > 0 && word_at(i - 1)) != word_at(i); };
  static const std::u32string articles[] = {U"a", U"an", U"the"};
  std::u32string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t matched = 0;
    if (boundary(i))
      for (const std::u32string& article : articles)
        if (text.compare(i, article.size(), article) == 0 && boundary(i + article.size())) {
          matched = article.size();
          break;
        }
    if (matched > 0) {
      out.push_back(U' ');
      i += matched;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

std::vector<std::u32string> normalized_words(std::string_view text) {
  std::u32string lowered = python_lower(utf8_to_code_points(text));
  std::u32string unpunctuated;
  for (char32_t c : lowered)
    if (!is_string_punctuation(c)) unpunctuated.push_back(c);
  return python_split(remove_articles(unpunctuated));
}

}  // namespace

bool is_python_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::vector<std::u32string> python_split(const std::u32string& text) {
  std::vector<std::u32string> words;
  std::u32string word;
  for (char32_t c : text) {
    if (is_python_whitespace(c)) {
      if (!word.empty()) words.push_back(std::move(word)), word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::u32string utf8_to_code_points(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t i = 0;
  const auto n = static_cast<utf8proc_ssize_t>(text.size());
  while (i < n) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t used = utf8proc_iterate(bytes + i, n - i, &c);
    if (used <= 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(c));
      i += used;
    }
  }
  return out;
}

std::string code_points_to_utf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  utf8proc_uint8_t buffer[4];
  for (char32_t c : text) {
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
    out.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
  }
  return out;
}

std::u32string python_lower(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c < 128) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x0130) {  // SpecialCasing.txt's one unconditional multi-code-point lower case
      out.push_back(U'i');
      out.push_back(0x0307);
    } else if (c == 0x03A3) {
      out.push_back(is_final_sigma(text, i) ? 0x03C2 : 0x03C3);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
  return out;
}

std::string normalize_squad_answer(std::string_view text) {
  std::u32string joined;
  for (const std::u32string& word : normalized_words(text)) {
    if (!joined.empty()) joined.push_back(U' ');
    joined += word;
  }
  return code_points_to_utf8(joined);
}

std::vector<std::string> squad_answer_tokens(std::string_view text) {
  std::vector<std::string> tokens;
  for (const std::u32string& word : normalized_words(text)) tokens.push_back(code_points_to_utf8(word));
  return tokens;
}

}  // namespace loom::host
