// Added tokens of a Hugging Face tokenizer ("added_tokens" in tokenizer.json): strings matched in
// the text before the model sees it, each becoming its own id. Matching follows `tokenizers`'
// AddedVocabulary: leftmost-longest over all contents (its Aho-Corasick automaton), scanning on
// after each match; `single_word` drops a match touching a word character on either side (the
// match's span stays consumed); `lstrip`/`rstrip` widen a match over the whitespace before/after
// it. Tokens with `normalized: false` (special tokens by default) are matched in the raw text,
// the others in the text after the normalizer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::bpe {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

/// A stretch of text: an added token's match (token >= 0, index into the matcher's tokens) or
/// text between matches (token == -1). [begin, end) are bytes.
struct TextSplit {
  int32_t token;
  uint32_t begin;
  uint32_t end;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  /// Matches `tokens` (an empty content is ignored).
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  const AddedToken& token(int32_t index) const { return tokens_[static_cast<size_t>(index)]; }

  /// Splits valid UTF-8 `text` into matches and the text between them (appended to `out`; empty
  /// stretches are left out).
  void split(std::string_view text, std::vector<TextSplit>& out) const;

 private:
  std::vector<AddedToken> tokens_;
  // Per first byte: indices of the tokens starting with it, longest first.
  std::array<std::vector<int32_t>, 256> by_first_byte_;
};

}  // namespace loom::bpe
