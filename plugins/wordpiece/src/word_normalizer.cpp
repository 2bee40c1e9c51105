// Word normalisation through utf8proc; see word_normalizer.hpp for the contract.
#include "word_normalizer.hpp"

#include <utf8proc.h>

#include <stdexcept>

#include "character_classes.hpp"
#include "utf8_decoder.hpp"

namespace loom::wordpiece {
namespace {

// Canonical decomposition with canonical ordering (utf8proc works on UTF-8 input), then, for NFC,
// canonical composition. STABLE keeps the result fixed across Unicode versions, as NFC/NFD are.
void normalize_form(std::u32string& word, bool compose) {
  std::string utf8;
  utf8.reserve(word.size() * 3);
  for (char32_t c : word) append_utf8(utf8, c);
  const utf8proc_option_t options =
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | (compose ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE));
  std::vector<utf8proc_int32_t> buffer(word.size() * 4 + 8);
  for (;;) {
    const utf8proc_ssize_t written = utf8proc_decompose(
        reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()), static_cast<utf8proc_ssize_t>(utf8.size()),
        buffer.data(), static_cast<utf8proc_ssize_t>(buffer.size()), options);
    if (written < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(written));
    if (static_cast<size_t>(written) > buffer.size()) {
      buffer.resize(static_cast<size_t>(written));
      continue;
    }
    utf8proc_ssize_t length = written;
    if (compose) {
      length = utf8proc_normalize_utf32(buffer.data(), written, options);
      if (length < 0) throw std::runtime_error(std::string("utf8proc: ") + utf8proc_errmsg(length));
    }
    word.assign(buffer.begin(), buffer.begin() + length);
    return;
  }
}

}  // namespace

void lower_case_in_place(std::u32string& word) {
  // Code point by code point, without context: capital sigma is always U+03C3, never the final
  // form (docs/decisions/tokenizer-semantics.md).
  const std::u32string original = word;
  word.clear();
  for (const char32_t c : original) {
    if (c < 128) {
      word.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x0130) {  // the one unconditional multi-code-point lower-case mapping
      word.push_back('i');
      word.push_back(0x0307);
    } else {
      word.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
}

void WordNormalizer::normalize(const std::u32string& word, std::u32string& out) const {
  out = word;
  normalize_form(out, /*compose=*/true);
  if (lower_case_) lower_case_in_place(out);
  if (strip_accents_) {
    normalize_form(out, /*compose=*/false);
    size_t kept = 0;
    for (char32_t c : out)
      if (!is_nonspacing_mark(c)) out[kept++] = c;
    out.resize(kept);
  }
}

}  // namespace loom::wordpiece
