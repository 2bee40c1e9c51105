// The Unicode classes GPT-2's split pattern asks about, with Oniguruma's meanings (the regex engine
// Hugging Face `tokenizers` runs the pattern with): \p{L} is general category L*, \p{N} is N*, and
// \s is U+0009..U+000D, U+0085 and the separators Zs, Zl, Zp. utf8proc supplies the categories.
#pragma once

#include <cstdint>

namespace loom::bpe {

enum class CharacterClass : uint8_t { letter, number, space, other };

/// The class of code point `c` (ASCII from a table, the rest from utf8proc).
CharacterClass character_class(char32_t c);

/// Rust's char::is_whitespace (Unicode White_Space), which Hugging Face uses to strip added tokens
/// (lstrip/rstrip) and to trim offsets.
bool is_white_space(char32_t c);

/// A word character for added tokens' single_word: Rust's char::is_alphanumeric or '_', without
/// the Other_Alphabetic marks (see the definition).
bool is_word_character(char32_t c);

}  // namespace loom::bpe
