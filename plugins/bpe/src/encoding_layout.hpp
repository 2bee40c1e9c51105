// One or two tokenized sequences → the model's input, as `tokenizers` builds it: truncation
// first (to max_length less the template's special tokens), then the post-processor's template
// (RoBERTa's <s> A </s></s> B </s>, a TemplateProcessing such as ModernBERT's
// [CLS] A [SEP] B [SEP]; without one, A then B with token types 0 and 1), then padding.
//
// longest_first is `tokenizers`' rule, which differs from the one-token-at-a-time loop of
// tokenizer/wordpiece (transformers' Python tokenizers) by at most one token between the two
// sequences: when both must shrink, the first keeps max/2 tokens and the second the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "bpe_config.hpp"
#include "loom/sdk/token_offsets.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace loom::bpe {

/// A tokenized sequence: ids and, when the caller wants them, their offsets.
struct TokenizedSequence {
  std::vector<int32_t> ids;
  std::vector<loom::TokenOffset> offsets;  ///< empty when not wanted
};

/// Lays out `a` (and `b` when not nullptr) into `out` (and `offsets` when not nullptr);
/// returns the length needed. Throws loom::Error when the strategy cannot reach max_length, or
/// padding is asked for and `pad_id` < 0.
size_t lay_out(TokenizedSequence a, const TokenizedSequence* b, const PostProcessorSettings& post,
               const loom::EncodeOptions& options, int32_t pad_id, const loom::EncodedBuffers& out,
               loom::TokenOffset* offsets);

}  // namespace loom::bpe
