// Text → tokens the way Hugging Face `tokenizers` runs a byte-level BPE tokenizer, before its
// post-processor: added tokens that are not normalized are matched in the raw text; the stretches
// between them are normalized; normalized added tokens are matched there; every remaining stretch
// goes through the ByteLevel pre-tokenizer (a prefix space when configured, GPT-2's split pattern)
// and each piece through the BPE model. Each token keeps the bytes of the input it came from.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "added_tokens.hpp"
#include "bpe_config.hpp"
#include "bpe_model.hpp"
#include "normalizer.hpp"

namespace loom::bpe {

/// A token of one sequence: its id, the input bytes [begin, end) it came from, and how many
/// characters at each end of its text are whitespace (or "Ġ"), which ByteLevel offset trimming
/// removes from its offsets.
struct SequenceToken {
  int32_t id;
  uint32_t begin;
  uint32_t end;
  uint16_t leading_spaces;
  uint16_t trailing_spaces;
};

class BpePipeline {
 public:
  /// Takes the vocabulary and merges out of `config`. Throws loom::ConfigError as BpeModel does.
  explicit BpePipeline(BpeConfig& config);

  /// Appends the tokens of valid UTF-8 `text` to `out`.
  void run(std::string_view text, std::vector<SequenceToken>& out) const;

  /// The pieces of valid UTF-8 `text` a BPE trainer counts — normalized and pre-tokenized, added
  /// tokens not split out — spelled in the byte-level alphabet and joined by single spaces into
  /// `joined` (replacing its contents).
  void spelled_words(std::string_view text, std::string& joined) const;

  const BpeModel& model() const { return *model_; }
  /// Leading "Ġ"/whitespace characters of each vocabulary entry's spelling (index: id).
  const std::vector<uint8_t>& leading_spaces() const { return leading_spaces_; }

 private:
  struct Stretch;  // text the pre-tokenizer sees, with where its bytes came from
  void added_token(const AddedToken& token, std::string_view matched, uint32_t begin, uint32_t end,
                   std::vector<SequenceToken>& out) const;
  void pre_tokenize_and_merge(const Stretch& stretch, std::vector<SequenceToken>& out) const;

  std::unique_ptr<BpeModel> model_;
  AddedTokenMatcher raw_tokens_;         // normalized: false
  AddedTokenMatcher normalized_tokens_;  // normalized: true
  Normalizer normalizer_;
  ByteLevelSettings pre_tokenizer_;
  std::vector<uint8_t> leading_spaces_, trailing_spaces_;
};

}  // namespace loom::bpe
