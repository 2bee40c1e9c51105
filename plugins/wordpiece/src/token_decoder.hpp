// Ids → text as transformers' BertTokenizer.decode: ids become tokens ([PAD] [UNK] [CLS] [SEP]
// [MASK] dropped when skip_special_tokens), joined by spaces, " ##" removed, ends stripped; then,
// optionally, clean_up_tokenization's replacements in its order:
// " ." " ?" " !" " ," " ' " " n't" " 'm" " 's" " 've" " 're".
// Special tokens are joined like any other token (transformers ≥ 4.34 treats only non-special added
// tokens separately, and a BERT vocabulary has none), so "[SEP] ##x" decodes to "[SEP]x".
#pragma once

#include <cstdint>
#include <string>

#include "loom/sdk/tokenizer.hpp"
#include "vocabulary.hpp"

namespace loom::wordpiece {

/// Decodes `ids`. `special_ids` (count `special_count`) are dropped under skip_special_tokens.
/// Throws loom::Error on an id outside the vocabulary.
std::string decode_ids(const Vocabulary& vocabulary, const int32_t* ids, size_t count,
                       const DecodeOptions& options, const int32_t* special_ids, size_t special_count);

/// transformers' clean_up_tokenization.
std::string clean_up_tokenization(std::string text);

}  // namespace loom::wordpiece
