// The tokenizer.json `loom vocab train --kind bpe` writes, in Hugging Face `tokenizers`' layout so
// both its library and tokenizer/bpe load it: a BPE model behind the ByteLevel pre-tokenizer and
// decoder, RoBERTa's special tokens (<s> <pad> </s> <unk> <mask>, ids 0-4, <mask> taking the space
// before it) and RobertaProcessing (<s> A </s> and <s> A </s></s> B </s>).
#pragma once

#include <string>

#include "prep/bpe_trainer.hpp"

namespace loom::host {

/// RoBERTa's special tokens, in id order.
std::vector<std::string> roberta_special_tokens();

/// The trained tokenizer's file text.
std::string trained_bpe_tokenizer_json(const BpeTrainingResult& trained, bool add_prefix_space);

/// A tokenizer.json with an empty model: tokenizer/bpe built from it pre-tokenizes (the word
/// splitter training counts with) and knows no token.
std::string splitter_bpe_tokenizer_json(bool add_prefix_space);

}  // namespace loom::host
