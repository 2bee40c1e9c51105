// Reads GPT-2's published layout: vocab.json (token → id) and merges.txt (one "left right" pair
// per line in rank order, after an optional "#version" line), as Hugging Face's BPE.from_file and
// GPT2TokenizerFast read them: ByteLevel pre-tokenizer without a prefix space, no normalizer, no
// post-processor, and "<|endoftext|>" as a special added token when the vocabulary has it.
#pragma once

#include <string>

#include "bpe_config.hpp"

namespace loom::bpe {

/// Throws loom::IoError for a file that cannot be read or parsed, naming it and the line.
BpeConfig read_gpt2_files(const std::string& vocab_json, const std::string& merges_txt);

}  // namespace loom::bpe
