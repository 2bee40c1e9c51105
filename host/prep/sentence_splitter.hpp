// Sentence splitting for English prose (document formatting of `loom prep pretraining`).
//
// Rules (docs/data.md "Sentence splitting"):
// - A blank line ends a paragraph, and a paragraph end always ends a sentence; the lines of a
//   paragraph are joined with single spaces (hard-wrapped text such as Project Gutenberg's).
// - Inside a paragraph a word ending in `.`, `?`, `!` or `…` (possibly followed by closing quotes
//   or brackets) ends a sentence when the next word starts, after any opening quotes/brackets,
//   with an upper-case letter or a digit.
// - A `.` does not end a sentence after a known abbreviation (Mr., Dr., St., Gen., Jan., etc.,
//   e.g., No., vs. ...), a single-letter initial (J. Smith), or a word with inner periods
//   (U.S., a.m.). Decimals (3.14, $1.5) never split because no space follows the point.
// Output sentences have single spaces and no leading/trailing whitespace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::host {

/// Splits `text` (UTF-8) into sentences per the rules above.
std::vector<std::string> split_sentences(std::string_view text);

}  // namespace loom::host
