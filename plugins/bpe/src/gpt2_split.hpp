// GPT-2's split pattern, scanned by hand:
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// with the ordered alternation of a backtracking engine (the first alternative that matches wins),
// which is how Hugging Face's ByteLevel pre-tokenizer runs it (Oniguruma). What that means for
// whitespace: a run that reaches the end of the text is one piece; otherwise the run without its
// last character is one piece, and that last character is a piece of its own unless it is a
// space (U+0020), which then starts the next word (" world"). Contractions are lower-case only:
// "HE'S" splits as "HE", "'", "S".
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::bpe {

/// The pieces of valid UTF-8 `text` as [begin, end) byte ranges, appended to `pieces` in order;
/// together they cover the text.
void split_gpt2(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>& pieces);

}  // namespace loom::bpe
