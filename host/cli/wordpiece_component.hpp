// tokenizer/wordpiece for the verbs that take `--vocab V [--cased]` instead of a recipe
// (tokenize, vocab train): created through the plugin registry like any recipe component.
#pragma once

#include <string>

#include "cli_context.hpp"
#include "plugin_loading/component.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace loom::cli {

/// Loads plugins per `options` and creates tokenizer/wordpiece with `vocab = <vocab>` and
/// `cased = <cased>`; `origin` names the flag in error messages ("loom tokenize --vocab").
/// Throws PluginLoadError when the component is not available, RecipeError on bad options.
host::Component<loom::Tokenizer> create_wordpiece(const GlobalOptions& options, const std::string& vocab,
                                                  bool cased, const std::string& origin);

}  // namespace loom::cli
