// The tokenizer behind the data verbs' --vocab (loom prep pretraining, loom tokenize): a Hugging
// Face tokenizer.json (a path ending in ".json") is tokenizer/bpe, anything else a WordPiece
// vocab.txt for tokenizer/wordpiece. Both are created through the plugin registry like any recipe
// component; a recipe names its own with [tokenizer] component = "bpe" | "wordpiece" and vocab.
#pragma once

#include <string>

#include "cli_context.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "plugin_loading/component.hpp"

namespace loom::cli {

/// "bpe" for a tokenizer.json, "wordpiece" otherwise.
std::string tokenizer_component_for_vocab(const std::string& vocab);

/// Creates that component with `vocab` (and `cased`, which tokenizer/wordpiece alone takes: a
/// tokenizer.json says its own normalization). `origin` names the flag in error messages.
host::Component<loom::Tokenizer> create_tokenizer_for_vocab(const GlobalOptions& options, const std::string& vocab,
                                                            bool cased, const std::string& origin);

}  // namespace loom::cli
