// Normalises one whitespace-delimited word exactly as Hugging Face's BasicTokenizer does:
//   NFC (the whole text is NFC-normalised before splitting; composition never crosses a space)
//   → lower-case code point by code point (simple mappings plus U+0130 → i U+0307) when lower_case
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

/// Lower-cases `word` in place code point by code point, as Hugging Face's tokenizers do: each
/// code point's simple lower-case mapping, and U+0130 → i U+0307. No context rule applies, so
/// U+03A3 always becomes U+03C3 (full Unicode lower-casing would give final sigma at a word end).
void lower_case_in_place(std::u32string& word);

}  // namespace loom::wordpiece
