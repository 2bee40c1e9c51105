// Ids → text as Hugging Face's ByteLevel decoder does it: the tokens' spellings joined, each
// character of the byte-level alphabet turned back into its byte (a token holding a character
// outside the alphabet contributes its own UTF-8), the bytes read as UTF-8 with U+FFFD for what
// is ill-formed; then, when asked, transformers' clean-up of spaces before punctuation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/sdk/tokenizer.hpp"

namespace loom::bpe {

/// `spellings` by id; `skipped[id]` != 0 for what skip_special_tokens drops. Throws loom::Error
/// for an id outside the vocabulary.
std::string decode_byte_level(const std::vector<std::string>& spellings, const std::vector<uint8_t>& skipped,
                              const int32_t* ids, size_t count, const loom::DecodeOptions& options);

}  // namespace loom::bpe
