// Reads a Hugging Face tokenizer.json whose model is BPE behind the ByteLevel pre-tokenizer (GPT-2,
// RoBERTa, ModernBERT and their kin). Every key is checked: a component or setting tokenizer/bpe
// does not implement is refused with loom::ConfigError naming the file and the key, never
// approximated.
#pragma once

#include <string>

#include "bpe_config.hpp"

namespace loom::bpe {

/// Throws loom::IoError when the file cannot be read or parsed, loom::ConfigError for what it
/// holds that tokenizer/bpe does not implement.
BpeConfig read_tokenizer_json(const std::string& path);

/// The same from the file's text; `path` names it in messages.
BpeConfig parse_tokenizer_json(const std::string& text, const std::string& path);

}  // namespace loom::bpe
