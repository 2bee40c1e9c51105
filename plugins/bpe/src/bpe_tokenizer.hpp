// tokenizer/bpe: byte-level BPE with Hugging Face `tokenizers` semantics behind loom::Tokenizer,
// offering TokenOffsets (ids with offsets) and VocabularyFile.
//
// Options (recipe table [tokenizer], or the data verbs' --vocab):
//   vocab        a Hugging Face tokenizer.json (model BPE, pre-tokenizer ByteLevel), or GPT-2's
//                vocab.json together with `merges` (relative paths resolve against the current
//                directory)
//   merges       merges.txt, with a vocab.json only
//   add_prefix_space  vocab.json + merges.txt only: the ByteLevel prefix space (default false, as
//                GPT-2); a tokenizer.json says it itself
//   pad_token, mask_token, unk_token, cls_token, sep_token
//                the tokens special_token_ids() reports, when the defaults do not find them:
//                cls and sep are the template's first and last special token, pad "<pad>" or
//                "[PAD]", mask "<mask>" or "[MASK]", unk the model's unk_token ("<unk>", "[UNK]")
//
// pre_tokenize: the words a BPE trainer counts, as `tokenizers` trains (normalizer, then the
// ByteLevel pre-tokenizer; added tokens are not split out), each spelled in the byte-level
// alphabet (so "Ġworld" keeps its space and no word holds a raw space), joined by single spaces.
//
// Whole-word masking: is_continuation(id) is true for a vocabulary token whose spelling does not
// start with "Ġ" (the byte-level space) — a piece that continues the word before it — and false
// for added tokens (docs/decisions/bpe-tokenizer.md).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bpe_config.hpp"
#include "bpe_pipeline.hpp"
#include "encoding_layout.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/token_offsets.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "loom/sdk/vocabulary_file.hpp"

namespace loom::bpe {

/// Names for special_token_ids() that override the defaults ("" = default).
struct SpecialTokenNames {
  std::string pad, mask, unk, cls, sep;
};

class BpeTokenizer final : public loom::Tokenizer, public loom::TokenOffsets, public loom::VocabularyFile {
 public:
  explicit BpeTokenizer(loom::ComponentContext& context);
  /// From a configuration read by read_tokenizer_json / read_gpt2_files (tests, tools, the bench).
  explicit BpeTokenizer(BpeConfig config, const SpecialTokenNames& names = {});

  int32_t vocab_size() const override { return static_cast<int32_t>(spellings_.size()); }
  const char* id_to_token(int32_t id) const override;
  int32_t token_to_id(const char* token, size_t length) const override;
  SpecialTokenIds special_token_ids() const override { return specials_; }
  bool is_continuation(int32_t id) const override;
  bool lower_case() const override { return lower_case_; }

  size_t tokenize(const char* text, size_t length, int32_t* ids, size_t capacity) const override;
  size_t pre_tokenize(const char* text, size_t length, char* words, size_t capacity) const override;
  size_t encode(const char* a, size_t a_length, const char* b, size_t b_length, const EncodeOptions& options,
                const EncodedBuffers& out) const override;
  size_t encode_ids(const int32_t* a, size_t a_count, const int32_t* b, size_t b_count,
                    const EncodeOptions& options, const EncodedBuffers& out) const override;
  size_t decode(const int32_t* ids, size_t count, const DecodeOptions& options, char* text,
                size_t capacity) const override;
  uint64_t invalid_utf8_replacements() const override { return replacements_.load(); }

  size_t tokenize_with_offsets(const char* text, size_t length, OffsetUnit unit, int32_t* ids, TokenOffset* offsets,
                               size_t capacity) const override;
  size_t encode_with_offsets(const char* a, size_t a_length, const char* b, size_t b_length,
                             const EncodeOptions& options, OffsetUnit unit, const EncodedBuffers& out,
                             TokenOffset* offsets) const override;

  const char* vocabulary_path() const override { return path_.c_str(); }
  const char* vocabulary_sha256() const override { return sha256_.c_str(); }

  /// Ids of `text` (no template tokens).
  std::vector<int32_t> tokenize_to_vector(const char* text, size_t length) const;
  /// Ids and offsets of `text` (no template tokens), trimmed as the post-processor trims them.
  TokenizedSequence tokenize_sequence(const char* text, size_t length, OffsetUnit unit) const;
  /// Merges in rank order, as the model holds them.
  const BpeConfig& config() const { return config_; }

 private:
  void initialise(BpeConfig config, const SpecialTokenNames& names);
  void require_loaded() const;

  BpeConfig config_;  // what was read, less the vocabulary and merges (moved into the model)
  std::unique_ptr<BpePipeline> pipeline_;
  std::vector<std::string> spellings_;  // id → token ("" for an id nothing spells)
  std::vector<uint8_t> added_;          // id → 1 for an added token, 2 for a special one
  SpecialTokenIds specials_{-1, -1, -1, -1, -1};
  bool lower_case_ = false;
  std::string path_, sha256_;
  mutable std::atomic<uint64_t> replacements_{0};
};

}  // namespace loom::bpe
