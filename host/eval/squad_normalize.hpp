// The answer normalisation of the official SQuAD evaluation scripts (v1.1 and v2.0 share it),
// reproduced character for character as Python 3 runs it:
//   normalize_answer(s) = white_space_fix(remove_articles(remove_punc(lower(s))))
// - lower: Python's str.lower(): the full Unicode lower-case mapping (U+0130 'İ' becomes the two
//   code points "i̇"), and capital sigma becomes final sigma 'ς' in the Final_Sigma context
//   (after a cased letter, not before one, case-ignorable characters skipped);
// - remove_punc: drops the 32 ASCII characters of Python's string.punctuation, nothing else
//   (non-ASCII punctuation such as '¿', '“' or '–' stays);
// - remove_articles: re.sub(r'\b(a|an|the)\b', ' ', text) with Python 3's Unicode \b (word
//   characters: letters, digits and other numbers of any script, and '_'; combining marks are not);
// - white_space_fix: ' '.join(text.split()), splitting on what str.split() treats as whitespace
//   (ASCII \t\n\v\f\r\x1c-\x1f and space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028,
//   U+2029, U+202F, U+205F, U+3000).
// Character properties come from utf8proc (Unicode 15.0); the rules were checked over every code
// point against Python 3.11 (Unicode 14.0), docs/decisions/squad-evaluation.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::host {

/// normalize_answer of the official scripts. `text` is UTF-8 (as JSON strings are); an invalid
/// byte is kept as U+FFFD.
std::string normalize_squad_answer(std::string_view text);

/// normalize_answer(text).split(): the tokens F1 counts.
std::vector<std::string> squad_answer_tokens(std::string_view text);

/// Python's str.lower() of UTF-8 text (exposed for the tests and get_final_text's callers).
std::u32string python_lower(const std::u32string& text);

/// UTF-8 ↔ code points (invalid bytes → U+FFFD).
std::u32string utf8_to_code_points(std::string_view text);
std::string code_points_to_utf8(const std::u32string& text);

/// Python's str.isspace() for one code point (what str.split() splits on).
bool is_python_whitespace(char32_t c);

/// Python's str.split() without arguments.
std::vector<std::u32string> python_split(const std::u32string& text);

}  // namespace loom::host
