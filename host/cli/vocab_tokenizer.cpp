// See vocab_tokenizer.hpp.
#include "vocab_tokenizer.hpp"

#include <fmt/format.h>

#include "recipe/errors.hpp"
#include "wordpiece_component.hpp"

namespace loom::cli {

std::string tokenizer_component_for_vocab(const std::string& vocab) {
  const std::string suffix = ".json";
  const bool json = vocab.size() >= suffix.size() && vocab.compare(vocab.size() - suffix.size(), suffix.size(), suffix) == 0;
  return json ? "bpe" : "wordpiece";
}

host::Component<loom::Tokenizer> create_tokenizer_for_vocab(const GlobalOptions& options, const std::string& vocab,
                                                            bool cased, const std::string& origin) {
  if (tokenizer_component_for_vocab(vocab) == "wordpiece") return create_wordpiece(options, vocab, cased, origin);
  if (cased)
    throw host::RecipeError(fmt::format("{}: --cased is for WordPiece vocabularies; {} says its own normalization",
                                        origin, vocab));
  auto registry = make_registry(options, nullptr);
  const host::ComponentEntry* entry = registry->find(LOOM_KIND_TOKENIZER, "bpe");
  if (entry == nullptr)
    throw host::PluginLoadError(
        "tokenizer/bpe", fmt::format("is not available (searched: {}); build the bpe plugin or pass --plugin-path",
                                     fmt::join(registry->searched_directories(), ", ")));
  std::string quoted;  // a TOML basic string
  for (char c : vocab) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  host::ComponentConfig config;
  config.table_name = "tokenizer";
  config.toml = fmt::format("vocab = \"{}\"\n", quoted);
  config.table_origin = origin;
  return registry->create<loom::Tokenizer>(*entry, config, /*dry_run=*/false);
}

}  // namespace loom::cli
