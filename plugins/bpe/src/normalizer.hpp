// The normalizers tokenizer/bpe applies, as Hugging Face `tokenizers` defines them: NFC, NFKC,
// NFD, NFKD (utf8proc) and Lowercase (Rust's char::to_lowercase: the full mapping, so "İ" becomes
// "i̇"), alone or in a Sequence. A normalized text keeps, for each of its bytes, the bytes of the
// input it came from, so offsets point into the caller's text. Lowercase maps each character to
// its own; a Unicode normalization gives the parts of a decomposed character that character, and a
// composed character the character it was composed from first (its starter), as Hugging Face's
// alignments do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::bpe {

enum class NormalizerStep { nfc, nfd, nfkc, nfkd, lowercase };

/// Text after normalization, with the input range of each byte.
struct NormalizedText {
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> source;  ///< per byte of `text`: [begin, end) in the input
};

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}

  bool empty() const { return steps_.empty(); }
  /// Normalizes valid UTF-8 `input`; `base` is added to every source offset.
  NormalizedText apply(std::string_view input, uint32_t base) const;

 private:
  std::vector<NormalizerStep> steps_;
};

}  // namespace loom::bpe
