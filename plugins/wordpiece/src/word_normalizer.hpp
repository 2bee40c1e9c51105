// Normalises one whitespace-delimited word exactly as Hugging Face's BasicTokenizer does:
//   NFC (the whole text is NFC-normalised before splitting; composition never crosses a space)
//   → lower-case (Python str.lower(): simple mappings plus the final-sigma rule) when lower_case
//   → NFD and drop every Mn code point when strip_accents.
// ASCII words take a table-driven path (none of the steps but lower-casing can change them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::wordpiece {

class WordNormalizer {
 public:
  WordNormalizer(bool lower_case, bool strip_accents)
      : lower_case_(lower_case), strip_accents_(strip_accents) {}

  bool lower_case() const { return lower_case_; }
  bool strip_accents() const { return strip_accents_; }

  /// Normalises `word` (code points, at least one non-ASCII) into `out` (cleared first).
  void normalize(const std::u32string& word, std::u32string& out) const;

 private:
  bool lower_case_;
  bool strip_accents_;
};

/// Python's lower-casing of `word` in place: per-code-point simple mapping, except U+03A3 which
/// becomes final sigma U+03C2 when preceded by a cased letter and not followed by one (skipping
/// case-ignorable code points on both sides), as CPython's handle_capital_sigma.
void lower_case_in_place(std::u32string& word);

}  // namespace loom::wordpiece
